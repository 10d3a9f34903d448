/* The audit trail; see audit.h. */
#include "audit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "utf8.h"

const char *audit_outcome_to_string(enum audit_outcome o) {
        static const char *const names[_AUDIT_OUTCOME_MAX] = {
                [AUDIT_OK] = "ok", [AUDIT_ERROR] = "error", [AUDIT_CANCELLED] = "cancelled",
                [AUDIT_TIMEOUT] = "timeout", [AUDIT_DENIED] = "denied",
        };
        return o < _AUDIT_OUTCOME_MAX ? names[o] : "?";
}

static void add_field(struct audit_text *out, size_t *n, const char *key, const char *value) {
        snprintf(out->field[*n], sizeof out->field[*n], "MCPVISOR_%s=%s", key, value);
        utf8_mend(out->field[*n]); /* a client's own name, cut to the field's size */
        out->fields[*n] = out->field[*n];
        (*n)++;
}

void audit_format(const struct audit_record *r, struct audit_text *out) {
        bool tool = r->target && strcmp(r->method, "tools/call") == 0;
        const char *outcome = audit_outcome_to_string(r->outcome);
        char num[32], who[400] = "";
        size_t n = 0;

        snprintf(num, sizeof num, "%u", r->uid);
        add_field(out, &n, "UID", num);
        if (r->pid > 0) {
                snprintf(num, sizeof num, "%d", r->pid);
                add_field(out, &n, "PEER_PID", num);
        }
        add_field(out, &n, "METHOD", r->method);
        if (r->target)
                add_field(out, &n, tool ? "TOOL" : "TARGET", r->target);
        add_field(out, &n, "OUTCOME", outcome);
        snprintf(num, sizeof num, "%" PRIu64, r->duration_usec);
        add_field(out, &n, "DURATION_USEC", num);
        if (r->token)
                add_field(out, &n, "TOKEN_USER", r->token);
        if (r->remote)
                add_field(out, &n, "REMOTE", r->remote);
        if (r->client_name)
                add_field(out, &n, "CLIENT_NAME", r->client_name);
        out->fields[n] = NULL;
        /* Who, as far as it is known: a socket peer's pid, an HTTP client's token and
         * address; and the name the client gave itself. */
        if (r->pid > 0)
                snprintf(num, sizeof num, " pid %d", r->pid);
        else
                num[0] = '\0';
        snprintf(who, sizeof who, "%s%s%s%s%s%s%.100s", num, r->token ? " token " : "", r->token ? r->token : "",
                 r->remote ? " from " : "", r->remote ? r->remote : "", r->client_name ? " client " : "",
                 r->client_name ? r->client_name : "");
        utf8_mend(who);
        snprintf(out->message, sizeof out->message, "audit: uid %u%s %s%s%s: %s after %" PRIu64 " us", r->uid, who,
                 r->method, r->target ? " " : "", r->target ? r->target : "", outcome, r->duration_usec);
}

void audit_emit(const struct logger *lg, enum audit_mode mode, const struct audit_record *r) {
        struct audit_text text;

        if (mode == AUDIT_MODE_OFF || (mode == AUDIT_MODE_DENIED && r->outcome != AUDIT_DENIED))
                return;
        audit_format(r, &text);
        log_emit_always(lg, r->outcome == AUDIT_DENIED ? LOG_NOTICE : LOG_INFO,
                        &(struct log_subject){ .server = r->server, .client = r->client, .fields = text.fields },
                        text.message);
}
