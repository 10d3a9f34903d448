/* Unit tests for json-duplicates.c: repeated member names, their paths and counts. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-duplicates.h"

/* Every report as "path xCOUNT", one per line. */
struct reports {
        char text[4096];
};

static void collect(const struct json_duplicate *d, void *userdata) {
        struct reports *r = userdata;
        char *path = json_steps_path(d->steps, d->depth);
        size_t used = strlen(r->text);

        cr_assert_not_null(path);
        snprintf(r->text + used, sizeof r->text - used, "%s x%zu\n", path, d->count);
        free(path);
}

static const char *find(const char *json, int expect) {
        static struct reports r;

        memset(&r, 0, sizeof r);
        cr_assert_eq(json_find_duplicates(json, strlen(json), 32, collect, &r, NULL), expect, "%s", json);
        return r.text;
}

Test(json_duplicates, none) {
        cr_assert_str_eq(find("{}", 0), "");
        cr_assert_str_eq(find("{\"a\":1,\"b\":{\"a\":2},\"c\":[{\"a\":1},{\"a\":1}]}", 0), "");
        cr_assert_str_eq(find(" [1, \"x\", null, true, {\"k\": []}] ", 0), "");
        cr_assert_str_eq(find("\"a\"", 0), "");
}

Test(json_duplicates, top_level) {
        cr_assert_str_eq(find("{\"a\":1,\"b\":2,\"a\":3}", 0), "a x2\n");
        cr_assert_str_eq(find("{\"a\":1,\"a\":2,\"a\":3,\"b\":0,\"b\":0}", 0), "a x3\nb x2\n");
}

/* Reported in the order of the first occurrence, inner objects before the one around them. */
Test(json_duplicates, order_and_paths) {
        cr_assert_str_eq(find("{\"s\":{\"z\":{\"k\":1,\"k\":2},\"y\":0,\"z\":1,\"y\":1},\"l\":[0,{\"q\":1,\"q\":1}]}", 0),
                         "s.z.k x2\ns.z x2\ns.y x2\nl[1].q x2\n");
        cr_assert_str_eq(find("[[{\"a\":1,\"a\":1}]]", 0), "[0][0].a x2\n");
}

/* Compared as json-c keys them. */
Test(json_duplicates, escapes_decoded) {
        cr_assert_str_eq(find("{\"ab\":1,\"\\u0061b\":2}", 0), "ab x2\n");
        cr_assert_str_eq(find("{\"a\\/b\":1,\"a/b\":2}", 0), "a/b x2\n");
        cr_assert_str_eq(find("{\"\\u00e9\":1,\"\xc3\xa9\":2}", 0), "\xc3\xa9 x2\n");
        cr_assert_str_eq(find("{\"A\":1,\"a\":2}", 0), "", "names are case-sensitive");
}

/* json-c takes a lone surrogate escape that json-scan refuses: strings are only skipped. */
Test(json_duplicates, strings_json_c_reads) {
        cr_assert_str_eq(find("{\"a\":\"\\ud800\",\"a\":\"\\\"}\\\\\",\"\\udc00x\":0,\"\\udc00x\":1}", 0),
                         "a x2\n\xef\xbf\xbdx x2\n");
}

Test(json_duplicates, not_json) {
        find("{\"a\":1,", -EINVAL);
        find("{\"a\" 1}", -EINVAL);
        find("{} x", -EINVAL);
        find("", -EINVAL);
        find("[1,]", -EINVAL);
}

Test(json_duplicates, depth_bounded) {
        char deep[200];

        memset(deep, '[', 100);
        memset(deep + 100, ']', 100);
        cr_assert_eq(json_find_duplicates(deep, sizeof deep, 32, collect, &(struct reports){ 0 }, NULL), -EINVAL);
        cr_assert_eq(json_find_duplicates(deep + 70, 60, 32, collect, &(struct reports){ 0 }, NULL), 0);
}

/* An object of many members is sorted once, not compared pairwise. */
Test(json_duplicates, many_members, .timeout = 10) {
        size_t n = 200000, used = 1;
        char *text = malloc(n * 16 + 16);

        text[0] = '{';
        for (size_t i = 0; i < n; i++)
                used += (size_t)sprintf(text + used, "%s\"k%zu\":0", i ? "," : "", i == n - 1 ? 7 : i);
        text[used++] = '}';
        struct reports r = { 0 };
        cr_assert_eq(json_find_duplicates(text, used, 32, collect, &r, NULL), 0);
        cr_assert_str_eq(r.text, "k7 x2\n");
        free(text);
}

Test(json_duplicates, steps_path) {
        struct json_step steps[] = { { .name = "mcpServers" }, { .name = "a.b" }, { .name = "args" }, { .index = 3 } };
        char *path = json_steps_path(steps, 4);

        cr_assert_str_eq(path, "mcpServers.a.b.args[3]");
        free(path);
        path = json_steps_path(steps, 0);
        cr_assert_str_eq(path, "");
        free(path);
}

/* What json-c reads but JSON has not stops the walk, at that value, so that the reader can
 * refuse it instead of missing the repeated names after it. */
Test(json_duplicates, what_json_has_not_stops_the_walk) {
        static const char *const texts[] = { "{\"a\":NaN,\"b\":1,\"b\":2}", "{\"a\":-Infinity}", "{\"a\":Infinity}",
                                             "{\"a\":[1.]}" };

        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
                size_t stop = 0;

                cr_assert_eq(json_find_duplicates(texts[i], strlen(texts[i]), 32, collect, &(struct reports){ 0 }, &stop),
                             -EINVAL, "%s", texts[i]);
                cr_assert_geq(stop, 5, "%s: stopped at %zu", texts[i], stop);
                cr_assert_leq(stop, 8, "%s: stopped at %zu", texts[i], stop);
        }
}
