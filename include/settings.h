/* Table-driven validation of JSON objects into C structs: each key's type, range and
 * destination in one place, every problem reported with its JSON path. Shared by the
 * daemon settings and each server's entry. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct config_problems;

enum setting_type {
        SETTING_PATH,      /* absolute path string -> char * */
        SETTING_STRING,    /* any string -> char * */
        SETTING_SIZE,      /* non-negative number of bytes -> size_t */
        SETTING_SECONDS,   /* number -> double */
        SETTING_COUNT,     /* whole number -> unsigned */
        SETTING_MODE,      /* octal string like "0660" -> int */
        SETTING_LOG_LEVEL, /* "err" ... "debug" -> int */
        SETTING_BOOL,      /* true/false -> bool */
        SETTING_STRINGS,   /* array of strings -> NULL-terminated char ** */
        SETTING_CHOICE,    /* one of choices -> int index */
        SETTING_CUSTOM,    /* parse() decides */
        SETTING_IGNORED,   /* known and checked elsewhere; not stored */
        SETTING_NOTED,     /* another client's key we do not use: a warning saying note */
        SETTING_REFUSED,   /* another client's key we cannot honour: an error saying note */
};

struct setting {
        const char *key;
        enum setting_type type;
        size_t offset;
        double min, max;
        const char *const *choices;  /* SETTING_CHOICE, NULL-terminated */
        /* SETTING_CUSTOM: returns 0 or adds a problem and returns -EINVAL */
        int (*parse)(json_object *v, const char *path, void *dst, struct config_problems *p);
        const char *note;            /* SETTING_NOTED, SETTING_REFUSED: what the user loses, and what to do */
};

/* Applies each key of obj (an object) to base by its row of table; a key without one is
 * an error that names the closest key. path is the object's JSON path ("mcpvisor",
 * "mcpServers.github"; "" for the top). Returns the number of keys in error. */
size_t settings_apply(const struct setting *table, size_t n, json_object *obj, const char *path, void *base,
                      struct config_problems *p);

/* The key of table that key is most likely a typo of (letters' case aside), for "did you
 * mean"; NULL when none is close enough. */
const char *settings_closest(const struct setting *table, size_t n, const char *key);

/* json-c keeps a "\u0000" inside a string, where C's strings end: true, with an error at
 * path, when v is a string holding one, so that nothing is cut short silently (an env
 * value, an argument). Every string a setting takes is checked. */
bool settings_string_cut(json_object *v, const char *path, struct config_problems *p);

/* How settings_parse_list() reads an array of items, or an object of items by name, into a
 * list of structs: the list's pointer and its count (a size_t) are fields of the struct
 * the setting fills. */
struct settings_list {
        size_t item_size;
        size_t list_offset, count_offset;
        bool by_name;         /* an object NAME: item, instead of an array */
        size_t name_offset;   /* by name: the item's char *name, a copy of NAME once it is kept */
        /* by name: why NAME cannot name an item (told at its path, the item left out), or
         * NULL when it can; NULL: any name can */
        const char *(*name_problem)(const char *name);
        const char *expected; /* the problem when the value is not one (or, with nonempty, an empty one) */
        bool nonempty;
        /* Parses v, named name (NULL in an array), at path ("PATH[i]", "PATH.NAME"), into item
         * n of list, zeroed; the n before it are the items kept so far. Returns 0 to keep it,
         * or tells its problem and returns < 0 to leave it out. */
        int (*parse_item)(json_object *v, const char *name, const char *path, void *list, size_t n, void *arg,
                          struct config_problems *p);
        void (*item_done)(void *item); /* frees what an item holds; NULL: nothing */
};

/* The settings_list of the fields list and n of a struct type: an array, or by name (the
 * items' type item_type, with a field char *name). */
#define SETTINGS_LIST(type, list, n, parse, done, nonempty_, expected_)                                 \
        { sizeof(*((type *)0)->list), offsetof(type, list), offsetof(type, n), false, 0, NULL, expected_, \
          nonempty_, parse, done }
#define SETTINGS_LIST_BY_NAME(type, list, n, item_type, name_problem_, parse, done, expected_)         \
        { sizeof(item_type), offsetof(type, list), offsetof(type, n), true, offsetof(item_type, name),    \
          name_problem_, expected_, false, parse, done }

/* Parses v into a new list of the items kept, in order, set into dst's fields (in place of
 * the list they held). An item in error is left out and the others are still read, so
 * that every problem is told at once. Returns 0, -EINVAL when v or an item was in error,
 * or -ENOMEM. */
int settings_parse_list(const struct settings_list *how, json_object *v, const char *path, void *dst, void *arg,
                        struct config_problems *p);
/* Frees the list in dst's fields and each item it holds; the fields are left empty. */
void settings_list_done(const struct settings_list *how, void *dst);

/* Frees a NULL-terminated string array. */
void strv_free(char **strv);
