/* The audit trail: one journal record per call, or per denial, with who made it and how it
 * ended, so that `journalctl MCPVISOR_OUTCOME=denied` or `journalctl MCPVISOR_UID=1000`
 * answers "who called what". Arguments and results are never recorded. */
#pragma once

#include <stdint.h>

struct logger;

/* The "audit" setting, as indexes of its choices "off", "denied", "calls". */
enum audit_mode { AUDIT_MODE_OFF, AUDIT_MODE_DENIED, AUDIT_MODE_CALLS };

enum audit_outcome { AUDIT_OK, AUDIT_ERROR, AUDIT_CANCELLED, AUDIT_TIMEOUT, AUDIT_DENIED, _AUDIT_OUTCOME_MAX };

struct audit_record {
        uint64_t client;
        unsigned uid;
        int pid;                 /* the peer's, 0: unknown (HTTP over TCP) */
        const char *token;       /* the user of the HTTP bearer token it came with; NULL: none */
        const char *remote;      /* its network address ("192.0.2.1:51234"); NULL: none */
        const char *client_name; /* clientInfo.name of its initialize; NULL: not given */
        const char *server;      /* NULL: none (a target that no server offers) */
        const char *method;      /* "tools/call", "resources/read", ... */
        const char *target;      /* the tool or prompt's exposed name, the URI; NULL: none */
        enum audit_outcome outcome;
        uint64_t duration_usec;
};

/* The record's text and journal fields, as audit_emit() writes them. */
#define AUDIT_FIELDS 9
struct audit_text {
        char message[1024];
        char field[AUDIT_FIELDS][512];
        const char *fields[AUDIT_FIELDS + 1]; /* pointers into field, NULL-terminated */
};

void audit_format(const struct audit_record *r, struct audit_text *out);
/* Records r if mode asks for it (AUDIT_MODE_DENIED: denials only), whatever the log level. */
void audit_emit(const struct logger *lg, enum audit_mode mode, const struct audit_record *r);

const char *audit_outcome_to_string(enum audit_outcome o);
