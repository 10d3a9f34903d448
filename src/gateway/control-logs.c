/* "logs" NAME on the control socket: the server's last stderr lines the daemon keeps
 * (line-ring.h), for mcpvisorctl status NAME and logs NAME, with where the daemon's log
 * goes (under systemd mcpvisorctl reads the journal instead). With "after": N, only the
 * lines numbered past N, and how many of those were no longer kept: mcpvisorctl logs -f
 * asks again with the last number it got. */
#include <stdio.h>

#include "client.h"
#include "daemon-handle.h"
#include "jsonrpc.h"
#include "line-ring.h"
#include "methods.h"
#include "server.h"

/* Seconds since the epoch, to the millisecond: json-c would print 17 significant digits. */
static json_object *epoch_seconds(uint64_t usec) {
        double seconds = (double)(usec / 1000) / 1000.0;
        char text[32];

        snprintf(text, sizeof text, "%.3f", seconds);
        return json_object_new_double_s(seconds, text);
}

static json_object *line_object(const struct line_ring_line *l) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "seq", json_object_new_int64((int64_t)l->seq));
        json_object_object_add(o, "time", epoch_seconds(l->realtime_usec));
        json_object_object_add(o, "text", jsonrpc_text(l->text));
        return o;
}

static void logs(struct client *c, struct jsonrpc_msg *m) {
        json_object *v, *result, *lines;
        const struct line_ring *ring;
        const struct server *s;
        uint64_t after = 0, missed = 0;

        s = control_named_server(c, m);
        if (!s)
                return;
        if (json_object_object_get_ex(m->params, "after", &v)) {
                if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
                        client_reply_error(c, m->id, JSONRPC_INVALID_PARAMS,
                                           "Invalid params: \"after\" must be a line number (0 or more)", NULL);
                        return;
                }
                after = (uint64_t)json_object_get_int64(v);
        }
        ring = &s->stderr_lines;
        lines = json_object_new_array();
        for (size_t i = 0; i < ring->n; i++) {
                const struct line_ring_line *l = line_ring_get(ring, i);

                if (l->seq > after)
                        json_object_array_add(lines, line_object(l));
        }
        if (after > 0 && ring->n > 0 && line_ring_get(ring, 0)->seq > after + 1)
                missed = line_ring_get(ring, 0)->seq - after - 1;
        result = json_object_new_object();
        json_object_object_add(result, "name", json_object_new_string(s->config->name));
        json_object_object_add(result, "log", control_log_object(daemon_logger(c->daemon)));
        json_object_object_add(result, "lines", lines);
        json_object_object_add(result, "last", json_object_new_int64((int64_t)ring->last_seq));
        json_object_object_add(result, "missed", json_object_new_int64((int64_t)missed));
        client_reply_result(c, m->id, result);
}

const struct method control_logs = CONTROL_METHOD("logs", logs);
