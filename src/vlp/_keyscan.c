/* Whether JSON text may give a key twice in one object: the cheap test in front of
 * vlp.duplicates.find_duplicate_keys (the exact walk, in Python). Also split_lines, a
 * read's bytes cut at each newline (bytes.split(b"\n") looks at one byte at a time;
 * memchr at many).
 *
 * Bytes in, flags out; no knowledge of the message schema. The text is tokenised only as far
 * as the test needs (strings skipped, containers followed, the string after '{' or ',' in an
 * object taken as a key) and never validated: the callers have parsed it already. Keys are
 * compared byte for byte. Whenever that cannot settle the question (a key holding an escape,
 * an object with more than MAX_OBJECT_KEYS keys, nesting deeper than MAX_DEPTH, text that is
 * not JSON) the answer is "may repeat", and the exact walk decides. Every read is bounded by
 * the buffer's length, whatever the bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_DEPTH 128
#define MAX_OBJECT_KEYS 64
#define MAX_OPEN_KEYS 512 /* the keys of every object open at once */

typedef struct {
    const unsigned char *start;
    Py_ssize_t size;
} Key;

typedef struct {
    unsigned char is_object;
    unsigned char expect_key;
    int key_base; /* its first key's index in the key stack */
} Container;

/* The index of the quote closing the string whose contents start at `start`, or -1 when
 * the text ends first. A quote preceded by an odd run of backslashes is escaped. */
static Py_ssize_t
string_end(const unsigned char *text, Py_ssize_t size, Py_ssize_t start)
{
    Py_ssize_t at = start;
    while (at < size) {
        const unsigned char *quote = memchr(text + at, '"', (size_t)(size - at));
        if (quote == NULL) {
            return -1;
        }
        Py_ssize_t end = quote - text;
        Py_ssize_t before = end - 1;
        while (before >= start && text[before] == '\\') {
            before--;
        }
        if ((end - 1 - before) % 2 == 0) {
            return end;
        }
        at = end + 1;
    }
    return -1;
}

/* 1 when some object of `text` may give a key twice, 0 when none does. */
static int
may_repeat(const unsigned char *text, Py_ssize_t size)
{
    Container open[MAX_DEPTH];
    Key keys[MAX_OPEN_KEYS];
    int depth = 0;
    int key_count = 0;
    Py_ssize_t at = 0;
    while (at < size) {
        unsigned char c = text[at];
        if (c == '"') {
            Py_ssize_t end = string_end(text, size, at + 1);
            if (end < 0) {
                return 1;
            }
            if (depth > 0 && open[depth - 1].expect_key) {
                Container *object = &open[depth - 1];
                const unsigned char *key = text + at + 1;
                Py_ssize_t key_size = end - at - 1;
                object->expect_key = 0;
                if (memchr(key, '\\', (size_t)key_size) != NULL
                    || key_count - object->key_base >= MAX_OBJECT_KEYS
                    || key_count >= MAX_OPEN_KEYS) {
                    return 1;
                }
                for (int k = object->key_base; k < key_count; k++) {
                    if (keys[k].size == key_size && memcmp(keys[k].start, key, (size_t)key_size) == 0) {
                        return 1;
                    }
                }
                keys[key_count].start = key;
                keys[key_count].size = key_size;
                key_count++;
            }
            at = end + 1;
            continue;
        }
        switch (c) {
        case '{':
        case '[':
            if (depth == MAX_DEPTH) {
                return 1;
            }
            open[depth].is_object = (c == '{');
            open[depth].expect_key = (c == '{');
            open[depth].key_base = key_count;
            depth++;
            break;
        case '}':
        case ']':
            if (depth == 0) {
                return 1;
            }
            depth--;
            key_count = open[depth].key_base;
            break;
        case ',':
            if (depth > 0 && open[depth - 1].is_object) {
                open[depth - 1].expect_key = 1;
            }
            break;
        default:
            break;
        }
        at++;
    }
    return 0;
}

static PyObject *
keyscan_may_repeat_keys(PyObject *module, PyObject *data)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    int found = may_repeat((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

static PyObject *
keyscan_lines_repeating_keys(PyObject *module, PyObject *lines)
{
    (void)module;
    if (!PyList_Check(lines)) {
        PyErr_SetString(PyExc_TypeError, "lines_repeating_keys() takes a list of bytes");
        return NULL;
    }
    PyObject *found = PyList_New(0);
    if (found == NULL) {
        return NULL;
    }
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(lines); index++) {
        PyObject *line = PyList_GET_ITEM(lines, index);
        if (!PyBytes_Check(line)) {
            Py_DECREF(found);
            PyErr_SetString(PyExc_TypeError, "lines_repeating_keys() takes a list of bytes");
            return NULL;
        }
        if (!may_repeat((const unsigned char *)PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line))) {
            continue;
        }
        PyObject *number = PyLong_FromSsize_t(index);
        if (number == NULL || PyList_Append(found, number) < 0) {
            Py_XDECREF(number);
            Py_DECREF(found);
            return NULL;
        }
        Py_DECREF(number);
    }
    return found;
}

static PyObject *
keyscan_split_lines(PyObject *module, PyObject *data)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *lines = PyList_New(0);
    const char *at = view.buf;
    const char *end = at + view.len;
    while (lines != NULL) {
        const char *newline = memchr(at, '\n', (size_t)(end - at));
        const char *stop = newline == NULL ? end : newline;
        PyObject *line;
        if (newline == NULL && at == view.buf && PyBytes_CheckExact(data)) {
            line = Py_NewRef(data); /* no newline: the bytes themselves, not a copy */
        }
        else {
            line = PyBytes_FromStringAndSize(at, stop - at);
        }
        if (line == NULL || PyList_Append(lines, line) < 0) {
            Py_CLEAR(lines);
        }
        Py_XDECREF(line);
        if (newline == NULL) {
            break;
        }
        at = newline + 1;
    }
    PyBuffer_Release(&view);
    return lines;
}

static PyMethodDef keyscan_methods[] = {
    {"may_repeat_keys", keyscan_may_repeat_keys, METH_O,
     "may_repeat_keys(data, /)\n--\n\n"
     "Whether the JSON text `data` (bytes-like) may give a key twice in one object."},
    {"lines_repeating_keys", keyscan_lines_repeating_keys, METH_O,
     "lines_repeating_keys(lines, /)\n--\n\n"
     "The indexes of the lines (a list of bytes) that may give a key twice in one object."},
    {"split_lines", keyscan_split_lines, METH_O,
     "split_lines(data, /)\n--\n\n"
     "`data` (bytes-like) cut at each newline: bytes(data).split(b'\\n')."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef keyscan_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "vlp._keyscan",
    .m_doc = "Whether JSON text may give a key twice in one object; lines split (C; see _keyscan.c).",
    .m_size = 0,
    .m_methods = keyscan_methods,
};

PyMODINIT_FUNC
PyInit__keyscan(void)
{
    return PyModule_Create(&keyscan_module);
}
