/* A table of byte strings, each with a 64-bit signed value, usable as a dict by Python: what
 * vlp.thread.ThreadChecker remembers of every message id, kept off Python's heap.
 *
 * Generic: keys are byte strings (a str is taken as its UTF-8 encoding, a lone surrogate as
 * "surrogatepass" writes it), values are integers; nothing here knows what a key or a value
 * means, and nothing is decided here: Python asks, the table stores and finds.
 *
 * Exact: a key is found only when its bytes are equal to the stored ones; the hash only says
 * where to look. The hash is Python's own for bytes (siphash13 under the process's secret
 * key), so chosen keys cannot make the probes long any more than they can in a dict.
 *
 * Memory: each key's bytes once in one arena, an entry of 32 bytes per key in insertion
 * order, and slots of 8 bytes (open addressing, linear probing) at most half full; every
 * buffer grows by doubling, with its sizes checked for overflow, and at most 2**32 - 2 keys.
 * Keys are never deleted one by one; `truncate` forgets the latest ones. Because the slots
 * are always what inserting the entries in order gives (a resize re-inserts them in order),
 * clearing the last entry's slot restores the table exactly as it was before that insert.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* 2**32 - 2 keys (a slot's index half), fewer when Py_ssize_t could not count their buffers */
#define MAX_KEYS                                                                     \
    ((Py_ssize_t)((unsigned long long)PY_SSIZE_T_MAX / 64 < 0xfffffffeULL           \
                      ? (unsigned long long)PY_SSIZE_T_MAX / 64                      \
                      : 0xfffffffeULL))
#define TAG_MASK 0xffffffff00000000ULL   /* a slot's high half: its key's hash's high half */
#define INDEX_MASK 0x00000000ffffffffULL /* its low half: the entry's index + 1; 0 is empty */
#define FIRST_SLOTS 8

typedef struct {
    uint64_t hash;
    int64_t value;
    Py_ssize_t offset; /* of the key's bytes in the arena */
    Py_ssize_t size;
} Entry;

typedef struct {
    PyObject_HEAD
    uint64_t *slots;
    size_t mask; /* the number of slots - 1, a power of two - 1 */
    Entry *entries;
    Py_ssize_t count;
    Py_ssize_t entry_room;
    char *arena;
    Py_ssize_t arena_used;
    Py_ssize_t arena_room;
} KeyTable;

/* A key's bytes; `owner` holds them when they had to be made (else NULL). */
typedef struct {
    const char *bytes;
    Py_ssize_t size;
    PyObject *owner;
} Key;

static int
key_of(PyObject *object, Key *key)
{
    key->owner = NULL;
    if (PyBytes_Check(object)) {
        key->bytes = PyBytes_AS_STRING(object);
        key->size = PyBytes_GET_SIZE(object);
        return 0;
    }
    if (!PyUnicode_Check(object)) {
        PyErr_Format(PyExc_TypeError, "a KeyTable key is str or bytes, not %.100s",
                     Py_TYPE(object)->tp_name);
        return -1;
    }
    /* An ASCII str's own characters; else its UTF-8, made once and kept by the str. */
    key->bytes = PyUnicode_AsUTF8AndSize(object, &key->size);
    if (key->bytes != NULL) {
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        return -1;
    }
    PyErr_Clear();
    key->owner = PyUnicode_AsEncodedString(object, "utf-8", "surrogatepass");
    if (key->owner == NULL) {
        return -1;
    }
    key->bytes = PyBytes_AS_STRING(key->owner);
    key->size = PyBytes_GET_SIZE(key->owner);
    return 0;
}

/* Python's hash of bytes (Py_HashBuffer from 3.14 on, exported under this name before). */
static uint64_t
hash_of(const Key *key)
{
    return (uint64_t)_Py_HashBytes(key->bytes, key->size);
}

/* The index of the entry holding the key, or -1; `*slot` is its slot, or the empty slot where
 * it would go. The table is never full, so the probe ends. */
static Py_ssize_t
find(const KeyTable *table, const Key *key, uint64_t hash, size_t *slot)
{
    size_t at = (size_t)hash & table->mask;
    for (;;) {
        uint64_t content = table->slots[at];
        if (content == 0) {
            *slot = at;
            return -1;
        }
        if ((content & TAG_MASK) == (hash & TAG_MASK)) {
            Py_ssize_t index = (Py_ssize_t)(content & INDEX_MASK) - 1;
            const Entry *entry = &table->entries[index];
            if (entry->hash == hash && entry->size == key->size
                && (key->size == 0 || memcmp(table->arena + entry->offset, key->bytes, (size_t)key->size) == 0)) {
                *slot = at;
                return index;
            }
        }
        at = (at + 1) & table->mask;
    }
}

/* Entries and slots for `more` keys beyond those held (slots at most half full). */
static int
make_room(KeyTable *table, Py_ssize_t more)
{
    if (more > MAX_KEYS - table->count) {
        PyErr_SetString(PyExc_OverflowError, "a KeyTable holds at most 2**32 - 2 keys");
        return -1;
    }
    Py_ssize_t need = table->count + more;
    if (need > table->entry_room) {
        Py_ssize_t room = table->entry_room < FIRST_SLOTS ? FIRST_SLOTS : table->entry_room;
        while (room < need) {
            room = room > MAX_KEYS / 2 ? MAX_KEYS : room * 2;
        }
        Entry *entries = PyMem_Realloc(table->entries, (size_t)room * sizeof(Entry));
        if (entries == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        table->entries = entries;
        table->entry_room = room;
    }
    size_t slots = table->mask + 1;
    if ((size_t)need * 2 <= slots) {
        return 0;
    }
    while ((size_t)need * 2 > slots) {
        slots *= 2;
    }
    uint64_t *fresh = PyMem_Calloc(slots, sizeof(uint64_t));
    if (fresh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    size_t mask = slots - 1;
    for (Py_ssize_t index = 0; index < table->count; index++) { /* in insertion order */
        uint64_t hash = table->entries[index].hash;
        size_t at = (size_t)hash & mask;
        while (fresh[at] != 0) {
            at = (at + 1) & mask;
        }
        fresh[at] = (hash & TAG_MASK) | (uint64_t)(index + 1);
    }
    PyMem_Free(table->slots);
    table->slots = fresh;
    table->mask = mask;
    return 0;
}

/* A new key at its empty `slot`; room for its entry was made, its bytes get theirs here. */
static int
insert(KeyTable *table, size_t slot, const Key *key, uint64_t hash, int64_t value)
{
    if (key->size > table->arena_room - table->arena_used) {
        if (key->size > PY_SSIZE_T_MAX - table->arena_used) {
            PyErr_NoMemory();
            return -1;
        }
        Py_ssize_t need = table->arena_used + key->size;
        Py_ssize_t room = table->arena_room < 256 ? 256 : table->arena_room;
        while (room < need) {
            room = room > PY_SSIZE_T_MAX / 2 ? need : room * 2;
        }
        char *arena = PyMem_Realloc(table->arena, (size_t)room);
        if (arena == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        table->arena = arena;
        table->arena_room = room;
    }
    Entry *entry = &table->entries[table->count];
    entry->hash = hash;
    entry->value = value;
    entry->offset = table->arena_used;
    entry->size = key->size;
    if (key->size > 0) {
        memcpy(table->arena + table->arena_used, key->bytes, (size_t)key->size);
    }
    table->arena_used += key->size;
    table->count++;
    table->slots[slot] = (hash & TAG_MASK) | (uint64_t)table->count;
    return 0;
}

/* Forget the keys after the first `length`, the latest first (see the top of the file). */
static void
forget_after(KeyTable *table, Py_ssize_t length)
{
    while (table->count > length) {
        const Entry *entry = &table->entries[table->count - 1];
        size_t at = (size_t)entry->hash & table->mask;
        while ((table->slots[at] & INDEX_MASK) != (uint64_t)table->count) {
            at = (at + 1) & table->mask;
        }
        table->slots[at] = 0;
        table->arena_used = entry->offset;
        table->count--;
    }
}

static int
value_of(PyObject *object, int64_t *value)
{
    if (!PyLong_Check(object)) { /* an int subclass is read without running Python code */
        PyErr_Format(PyExc_TypeError, "a KeyTable value is an int, not %.100s",
                     Py_TYPE(object)->tp_name);
        return -1;
    }
    long long read = PyLong_AsLongLong(object);
    if (read == -1 && PyErr_Occurred()) {
        return -1;
    }
    *value = (int64_t)read;
    return 0;
}

/* The index of the entry of `object`; -1 when absent, -2 on an error. */
static Py_ssize_t
lookup(KeyTable *table, PyObject *object)
{
    Key key;
    size_t slot;
    if (key_of(object, &key) < 0) {
        return -2;
    }
    Py_ssize_t index = find(table, &key, hash_of(&key), &slot);
    Py_XDECREF(key.owner);
    return index;
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif
#define GROUP 16

/* Up to GROUP keys read and hashed, and the first slot of each asked of the memory at once:
 * the lookups that follow then wait for about one fetch from memory, not one each. */
typedef struct {
    Key keys[GROUP];
    uint64_t hashes[GROUP];
    Py_ssize_t size;
} Group;

static void
release_group(Group *group)
{
    for (Py_ssize_t at = 0; at < group->size; at++) {
        Py_XDECREF(group->keys[at].owner);
    }
    group->size = 0;
}

/* The keys of the tuple `keys` from `start` on (at most GROUP); -1 on an error. */
static int
read_group(const KeyTable *table, PyObject *keys, Py_ssize_t start, Group *group)
{
    Py_ssize_t size = PyTuple_GET_SIZE(keys) - start;
    group->size = 0;
    for (Py_ssize_t at = 0; at < size && at < GROUP; at++) {
        if (key_of(PyTuple_GET_ITEM(keys, start + at), &group->keys[at]) < 0) {
            release_group(group);
            return -1;
        }
        group->size++;
        group->hashes[at] = hash_of(&group->keys[at]);
        PREFETCH(&table->slots[(size_t)group->hashes[at] & table->mask]);
    }
    return 0;
}

static PyObject *
arguments_error(const char *name, Py_ssize_t least, Py_ssize_t most, Py_ssize_t given)
{
    PyErr_Format(PyExc_TypeError, "%s() takes %zd to %zd arguments (%zd given)", name, least,
                 most, given);
    return NULL;
}

static PyObject *
keytable_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "KeyTable() takes no arguments");
        return NULL;
    }
    KeyTable *table = (KeyTable *)type->tp_alloc(type, 0);
    if (table == NULL) {
        return NULL;
    }
    table->slots = PyMem_Calloc(FIRST_SLOTS, sizeof(uint64_t));
    if (table->slots == NULL) {
        Py_DECREF(table);
        return PyErr_NoMemory();
    }
    table->mask = FIRST_SLOTS - 1;
    return (PyObject *)table;
}

static void
keytable_dealloc(KeyTable *table)
{
    PyMem_Free(table->slots);
    PyMem_Free(table->entries);
    PyMem_Free(table->arena);
    Py_TYPE(table)->tp_free((PyObject *)table);
}

static Py_ssize_t
keytable_length(KeyTable *table)
{
    return table->count;
}

static int
keytable_contains(KeyTable *table, PyObject *object)
{
    Py_ssize_t index = lookup(table, object);
    return index == -2 ? -1 : index >= 0;
}

static PyObject *
keytable_subscript(KeyTable *table, PyObject *object)
{
    Py_ssize_t index = lookup(table, object);
    if (index == -2) {
        return NULL;
    }
    if (index == -1) {
        PyErr_SetObject(PyExc_KeyError, object);
        return NULL;
    }
    return PyLong_FromLongLong(table->entries[index].value);
}

static int
keytable_ass_subscript(KeyTable *table, PyObject *object, PyObject *given)
{
    if (given == NULL) {
        PyErr_SetString(PyExc_TypeError, "a KeyTable does not delete keys (see truncate)");
        return -1;
    }
    int64_t value;
    Key key;
    if (value_of(given, &value) < 0 || key_of(object, &key) < 0) {
        return -1;
    }
    /* Room made last: reading the key may run a collection, and a finalizer may use the
     * table; from here to the insert no Python code runs. */
    int result = make_room(table, 1);
    if (result == 0) {
        uint64_t hash = hash_of(&key);
        size_t slot;
        Py_ssize_t index = find(table, &key, hash, &slot);
        if (index >= 0) {
            table->entries[index].value = value;
        }
        else {
            result = insert(table, slot, &key, hash, value);
        }
    }
    Py_XDECREF(key.owner);
    return result;
}

static PyObject *
keytable_get(KeyTable *table, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        return arguments_error("get", 1, 2, nargs);
    }
    Py_ssize_t index = lookup(table, args[0]);
    if (index == -2) {
        return NULL;
    }
    if (index >= 0) {
        return PyLong_FromLongLong(table->entries[index].value);
    }
    PyObject *otherwise = nargs == 2 ? args[1] : Py_None;
    Py_INCREF(otherwise);
    return otherwise;
}

static PyObject *
keytable_get_all(KeyTable *table, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 2) {
        return arguments_error("get_all", 2, 2, nargs);
    }
    PyObject *keys = PySequence_Tuple(args[0]); /* a copy: nothing can change it meanwhile */
    if (keys == NULL) {
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(keys);
    PyObject *found = PyList_New(count);
    Group group;
    for (Py_ssize_t start = 0; found != NULL && start < count; start += GROUP) {
        if (read_group(table, keys, start, &group) < 0) {
            Py_CLEAR(found);
            break;
        }
        for (Py_ssize_t at = 0; at < group.size; at++) {
            size_t slot;
            Py_ssize_t index = find(table, &group.keys[at], group.hashes[at], &slot);
            PyObject *value = index < 0 ? Py_NewRef(args[1])
                                        : PyLong_FromLongLong(table->entries[index].value);
            if (value == NULL) {
                Py_CLEAR(found);
                break;
            }
            PyList_SET_ITEM(found, start + at, value);
        }
        release_group(&group);
    }
    Py_DECREF(keys);
    return found;
}

static PyObject *
keytable_add_all(KeyTable *table, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 2) {
        return arguments_error("add_all", 2, 2, nargs);
    }
    PyObject *keys = PySequence_Tuple(args[0]);
    if (keys == NULL) {
        return NULL;
    }
    PyObject *values = PySequence_Tuple(args[1]);
    if (values == NULL) {
        Py_DECREF(keys);
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(keys);
    Py_ssize_t before = table->count;
    PyObject *result = NULL;
    if (PyTuple_GET_SIZE(values) != count) {
        PyErr_SetString(PyExc_ValueError, "add_all() takes as many values as keys");
    }
    else if (make_room(table, count) == 0) { /* one resize for the batch, not several */
        result = Py_True;
        Group group;
        for (Py_ssize_t start = 0; result == Py_True && start < count; start += GROUP) {
            if (read_group(table, keys, start, &group) < 0) {
                result = NULL;
                break;
            }
            for (Py_ssize_t at = 0; at < group.size; at++) {
                int64_t value;
                size_t slot;
                const Key *key = &group.keys[at];
                /* Room was made for the whole batch, but reading the group may have run
                 * a finalizer that used the table: checked again (two comparisons). */
                if (value_of(PyTuple_GET_ITEM(values, start + at), &value) < 0
                    || make_room(table, 1) < 0) {
                    result = NULL;
                    break;
                }
                if (find(table, key, group.hashes[at], &slot) >= 0) {
                    result = Py_False;
                    break;
                }
                if (insert(table, slot, key, group.hashes[at], value) < 0) {
                    result = NULL;
                    break;
                }
            }
            release_group(&group);
        }
    }
    if (result != Py_True) {
        forget_after(table, before);
    }
    Py_DECREF(keys);
    Py_DECREF(values);
    return Py_XNewRef(result);
}

static PyObject *
keytable_truncate(KeyTable *table, PyObject *given)
{
    Py_ssize_t length = PyNumber_AsSsize_t(given, PyExc_OverflowError);
    if (length == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (length < 0 || length > table->count) {
        PyErr_Format(PyExc_ValueError, "truncate() takes a length from 0 to %zd, not %zd",
                     table->count, length);
        return NULL;
    }
    forget_after(table, length);
    Py_RETURN_NONE;
}

static PyMethodDef keytable_methods[] = {
    {"get", (PyCFunction)(void (*)(void))keytable_get, METH_FASTCALL,
     "get($self, key, default=None, /)\n--\n\nThe value of `key`, or `default` when it is absent."},
    {"get_all", (PyCFunction)(void (*)(void))keytable_get_all, METH_FASTCALL,
     "get_all($self, keys, default, /)\n--\n\n"
     "A list of the value of each key, `default` for an absent one."},
    {"add_all", (PyCFunction)(void (*)(void))keytable_add_all, METH_FASTCALL,
     "add_all($self, keys, values, /)\n--\n\n"
     "Add each key with its value when none of them is in the table and none repeats: True.\n"
     "Otherwise add none and return False (on an error, add none and raise)."},
    {"truncate", (PyCFunction)keytable_truncate, METH_O,
     "truncate($self, length, /)\n--\n\n"
     "Forget the keys added after the table held `length` keys, the latest first."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods keytable_as_sequence = {
    .sq_contains = (objobjproc)keytable_contains,
};

static PyMappingMethods keytable_as_mapping = {
    .mp_length = (lenfunc)keytable_length,
    .mp_subscript = (binaryfunc)keytable_subscript,
    .mp_ass_subscript = (objobjargproc)keytable_ass_subscript,
};

static PyTypeObject KeyTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "vlp._keytable.KeyTable",
    .tp_doc = "KeyTable()\n--\n\n"
              "A table of byte strings (str keys as UTF-8), each with a 64-bit signed value.",
    .tp_basicsize = sizeof(KeyTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = keytable_new,
    .tp_dealloc = (destructor)keytable_dealloc,
    .tp_as_sequence = &keytable_as_sequence,
    .tp_as_mapping = &keytable_as_mapping,
    .tp_methods = keytable_methods,
};

static struct PyModuleDef keytable_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "vlp._keytable",
    .m_doc = "A table of byte strings with integer values (C; see _keytable.c).",
    .m_size = 0,
};

PyMODINIT_FUNC
PyInit__keytable(void)
{
    if (PyType_Ready(&KeyTableType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&keytable_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "KeyTable", (PyObject *)&KeyTableType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
