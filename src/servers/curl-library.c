/* libcurl loaded when the first server reached by URL starts, not linked: its libraries
 * (OpenSSL, GnuTLS through LDAP, Kerberos, libssh2...) are 6 MB of pages in every daemon
 * otherwise, remote servers or not. The daemon's code calls curl's functions as usual;
 * each is defined here and goes to the loaded one. The table is the process's, as the
 * library's own global state is (curl_global_init): loaded once, never changed after. */
#define CURL_DISABLE_TYPECHECK 1 /* the type-checking macros would rename our definitions */
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include "curl-loop.h"

#define CURL_LIBRARY "libcurl.so.4"
/* Tests only (docs/testing.md): another name to load instead, one that does not exist
 * standing for a host without libcurl. Read at the load, never after one succeeded. */
#define CURL_LIBRARY_TEST_VARIABLE "MCPVISOR_TEST_LIBCURL"

#define CURL_FUNCTIONS(X)                                                                               \
        X(curl_global_init, CURLcode, (long flags))                                                      \
        X(curl_free, void, (void *p))                                                                     \
        X(curl_easy_init, CURL *, (void))                                                                 \
        X(curl_easy_cleanup, void, (CURL * e))                                                            \
        X(curl_easy_reset, void, (CURL * e))                                                              \
        X(curl_easy_setopt, CURLcode, (CURL * e, CURLoption option, ...))                                 \
        X(curl_easy_getinfo, CURLcode, (CURL * e, CURLINFO info, ...))                                    \
        X(curl_easy_strerror, const char *, (CURLcode code))                                              \
        X(curl_slist_append, struct curl_slist *, (struct curl_slist * list, const char *s))             \
        X(curl_slist_free_all, void, (struct curl_slist * list))                                          \
        X(curl_multi_init, CURLM *, (void))                                                               \
        X(curl_multi_cleanup, CURLMcode, (CURLM * m))                                                     \
        X(curl_multi_setopt, CURLMcode, (CURLM * m, CURLMoption option, ...))                             \
        X(curl_multi_add_handle, CURLMcode, (CURLM * m, CURL * e))                                        \
        X(curl_multi_remove_handle, CURLMcode, (CURLM * m, CURL * e))                                     \
        X(curl_multi_socket_action, CURLMcode, (CURLM * m, curl_socket_t s, int mask, int *running))      \
        X(curl_multi_assign, CURLMcode, (CURLM * m, curl_socket_t s, void *p))                            \
        X(curl_multi_info_read, CURLMsg *, (CURLM * m, int *left))                                        \
        X(curl_multi_strerror, const char *, (CURLMcode code))                                            \
        X(curl_url, CURLU *, (void))                                                                      \
        X(curl_url_cleanup, void, (CURLU * u))                                                            \
        X(curl_url_set, CURLUcode, (CURLU * u, CURLUPart what, const char *part, unsigned int flags))    \
        X(curl_url_get, CURLUcode, (CURLU * u, CURLUPart what, char **part, unsigned int flags))

#define X_FIELD(name, ret, args) ret(*name) args;
static struct {
        CURL_FUNCTIONS(X_FIELD)
} lib;

int curl_library_load(const char **ret_error) {
        static void *handle;

        const char *name = getenv(CURL_LIBRARY_TEST_VARIABLE);

        if (handle)
                return 0;
        handle = dlopen(name && *name ? name : CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
                *ret_error = dlerror();
                return -ENOENT;
        }
#define X_LOAD(name, ret, args)                                       \
        if (!(*(void **)&lib.name = dlsym(handle, #name))) {          \
                *ret_error = "a function missing in " CURL_LIBRARY;   \
                dlclose(handle);                                      \
                handle = NULL;                                        \
                return -ENOENT;                                       \
        }
        CURL_FUNCTIONS(X_LOAD)
        return 0;
}

/* ---- the forwarders: called only once curl_library_load() succeeded ---- */

/* An option's one argument, read as the type its number says (curl.h: CURLOPTTYPE_*,
 * which the easy and the multi options share): a long, a curl_off_t, or a pointer (data
 * and function pointers alike here). */
struct option_arg {
        enum { ARG_LONG, ARG_OFF_T, ARG_POINTER } type;
        long l;
        curl_off_t off;
        void *p;
};

static struct option_arg option_arg(int option, va_list *ap) {
        if (option < CURLOPTTYPE_OBJECTPOINT)
                return (struct option_arg){ .type = ARG_LONG, .l = va_arg(*ap, long) };
        if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB)
                return (struct option_arg){ .type = ARG_OFF_T, .off = va_arg(*ap, curl_off_t) };
        return (struct option_arg){ .type = ARG_POINTER, .p = va_arg(*ap, void *) };
}

/* A setopt forwarder, easy and multi alike: the one argument after the option read as its
 * number says, and passed on to the loaded function as it was given. */
#define SETOPT_FORWARDER(name, code_type, handle_type, option_type)                                     \
        code_type name(handle_type *h, option_type option, ...) {                                      \
                struct option_arg a;                                                                    \
                va_list ap;                                                                             \
                                                                                                        \
                va_start(ap, option);                                                                   \
                a = option_arg(option, &ap);                                                            \
                va_end(ap);                                                                             \
                return a.type == ARG_LONG    ? lib.name(h, option, a.l)                                 \
                       : a.type == ARG_OFF_T ? lib.name(h, option, a.off)                               \
                                             : lib.name(h, option, a.p);                                \
        }

CURLcode curl_global_init(long flags) {
        return lib.curl_global_init(flags);
}

void curl_free(void *p) {
        lib.curl_free(p);
}

CURL *curl_easy_init(void) {
        return lib.curl_easy_init();
}

void curl_easy_cleanup(CURL *e) {
        lib.curl_easy_cleanup(e);
}

void curl_easy_reset(CURL *e) {
        lib.curl_easy_reset(e);
}

SETOPT_FORWARDER(curl_easy_setopt, CURLcode, CURL, CURLoption)

CURLcode curl_easy_getinfo(CURL *e, CURLINFO info, ...) {
        va_list ap;
        CURLcode r;

        va_start(ap, info);
        r = lib.curl_easy_getinfo(e, info, va_arg(ap, void *)); /* always where to put it */
        va_end(ap);
        return r;
}

const char *curl_easy_strerror(CURLcode code) {
        return lib.curl_easy_strerror(code);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s) {
        return lib.curl_slist_append(list, s);
}

void curl_slist_free_all(struct curl_slist *list) {
        lib.curl_slist_free_all(list);
}

CURLM *curl_multi_init(void) {
        return lib.curl_multi_init();
}

CURLMcode curl_multi_cleanup(CURLM *m) {
        return lib.curl_multi_cleanup(m);
}

SETOPT_FORWARDER(curl_multi_setopt, CURLMcode, CURLM, CURLMoption)

CURLMcode curl_multi_add_handle(CURLM *m, CURL *e) {
        return lib.curl_multi_add_handle(m, e);
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *e) {
        return lib.curl_multi_remove_handle(m, e);
}

CURLMcode curl_multi_socket_action(CURLM *m, curl_socket_t s, int mask, int *running) {
        return lib.curl_multi_socket_action(m, s, mask, running);
}

CURLMcode curl_multi_assign(CURLM *m, curl_socket_t s, void *p) {
        return lib.curl_multi_assign(m, s, p);
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left) {
        return lib.curl_multi_info_read(m, left);
}

const char *curl_multi_strerror(CURLMcode code) {
        return lib.curl_multi_strerror(code);
}

CURLU *curl_url(void) {
        return lib.curl_url();
}

void curl_url_cleanup(CURLU *u) {
        lib.curl_url_cleanup(u);
}

CURLUcode curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags) {
        return lib.curl_url_set(u, what, part, flags);
}

CURLUcode curl_url_get(CURLU *u, CURLUPart what, char **part, unsigned int flags) {
        return lib.curl_url_get(u, what, part, flags);
}
