/* Attributes of many objects read as columns: columns(objects, names) is
 * [list(map(attrgetter(name), objects)) for name in names], in one pass over the objects.
 *
 * Generic: objects and attribute names in, lists out; no knowledge of the message schema.
 * The common case is read straight: an object whose type keeps the standard attribute
 * lookup (PyObject_GenericGetAttr) and whose type finds the name as a slot member holding an
 * object (a member descriptor, T_OBJECT_EX, as __slots__ and msgspec's Struct fields make).
 * A member descriptor is a data descriptor, so it wins over any instance __dict__, and the
 * slot is read as member_get would read it. So is a plain class attribute (not a
 * descriptor) of a type whose instances have no __dict__: the generic lookup returns it
 * as it is. Every other case (a property, a method, an instance __dict__, __getattr__, an
 * empty slot and its AttributeError) goes through PyObject_GetAttr, as attrgetter does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* How an attribute of a type's instances is read without the generic lookup: from a slot
 * (offset >= 0), as a constant (a plain class attribute), or neither (PyObject_GetAttr). */
typedef struct {
    Py_ssize_t offset;
    PyObject *constant; /* borrowed from the type */
} Way;

static Way
way_of(PyTypeObject *type, PyObject *name)
{
    Way way = {-1, NULL};
    if (type->tp_getattro != PyObject_GenericGetAttr) {
        return way;
    }
    PyObject *descr = _PyType_Lookup(type, name); /* borrowed */
    if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & PY_AUDIT_READ)) {
            way.offset = member->offset;
        }
    }
    else if (descr != NULL && Py_TYPE(descr)->tp_descr_get == NULL &&
             type->tp_dictoffset == 0 && !(type->tp_flags & Py_TPFLAGS_MANAGED_DICT)) {
        way.constant = descr; /* a plain class attribute, no instance dict to hide it */
    }
    return way;
}

/* The ways of the last few types met, for every name: valid while no Python code runs (it
 * could change a class), so forgotten at each PyObject_GetAttr. */
#define CACHED_TYPES 8
#define CACHED_NAMES 8

typedef struct {
    int count;
    PyTypeObject *types[CACHED_TYPES];
    Way ways[CACHED_TYPES][CACHED_NAMES];
} Ways;

static const Way *
ways_of(Ways *cache, PyTypeObject *type, PyObject *names, Way *uncached)
{
    for (int at = 0; at < cache->count; at++) {
        if (cache->types[at] == type) {
            return cache->ways[at];
        }
    }
    Py_ssize_t width = PyTuple_GET_SIZE(names);
    Way *ways = width <= CACHED_NAMES && cache->count < CACHED_TYPES
                    ? cache->ways[cache->count]
                    : uncached;
    for (Py_ssize_t column = 0; column < width; column++) {
        ways[column] = way_of(type, PyTuple_GET_ITEM(names, column));
    }
    if (ways != uncached) {
        cache->types[cache->count++] = type;
    }
    return ways;
}

static PyObject *
columns_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyList_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "columns(objects: list, names: tuple[str, ...])");
        return NULL;
    }
    PyObject *names = args[1];
    Py_ssize_t width = PyTuple_GET_SIZE(names);
    for (Py_ssize_t column = 0; column < width; column++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(names, column))) {
            PyErr_SetString(PyExc_TypeError, "attribute names must be str");
            return NULL;
        }
    }
    /* A copy of the list: a __getattr__ may change the list itself. */
    PyObject *objects = PyList_GetSlice(args[0], 0, PyList_GET_SIZE(args[0]));
    if (objects == NULL) {
        return NULL;
    }
    Py_ssize_t rows = PyList_GET_SIZE(objects);
    PyObject *result = PyList_New(width);
    if (result == NULL) {
        Py_DECREF(objects);
        return NULL;
    }
    for (Py_ssize_t column = 0; column < width; column++) {
        PyObject *values = PyList_New(rows);
        if (values == NULL) {
            Py_DECREF(objects);
            Py_DECREF(result);
            return NULL;
        }
        PyList_SET_ITEM(result, column, values);
    }
    Way *uncached = PyMem_New(Way, (size_t)width);
    if (uncached == NULL) {
        Py_DECREF(objects);
        Py_DECREF(result);
        return PyErr_NoMemory();
    }
    Ways cache = {.count = 0};
    /* Row by row: each object's fields are read while it is in the CPU caches. */
    for (Py_ssize_t row = 0; row < rows; row++) {
        PyObject *object = PyList_GET_ITEM(objects, row);
        const Way *ways = ways_of(&cache, Py_TYPE(object), names, uncached);
        for (Py_ssize_t column = 0; column < width; column++) {
            PyObject *value = NULL;
            if (ways[column].offset >= 0) {
                value = Py_XNewRef(*(PyObject **)((char *)object + ways[column].offset));
            }
            else if (ways[column].constant != NULL) {
                value = Py_NewRef(ways[column].constant);
            }
            if (value == NULL) { /* the generic lookup, or an empty slot's AttributeError */
                cache.count = 0;
                value = PyObject_GetAttr(object, PyTuple_GET_ITEM(names, column));
                if (value == NULL) {
                    PyMem_Free(uncached);
                    Py_DECREF(objects);
                    Py_DECREF(result);
                    return NULL;
                }
                /* Python code may have run: the rest of this row by the new ways. */
                ways = ways_of(&cache, Py_TYPE(object), names, uncached);
            }
            PyList_SET_ITEM(PyList_GET_ITEM(result, column), row, value);
        }
    }
    PyMem_Free(uncached);
    Py_DECREF(objects);
    return result;
}

static PyMethodDef columns_methods[] = {
    {"columns", (PyCFunction)(void (*)(void))columns_columns, METH_FASTCALL,
     "columns(objects, names, /)\n--\n\n"
     "[list(map(attrgetter(name), objects)) for name in names], in one pass over `objects`\n"
     "(a list); `names` is a tuple of str."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef columns_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "vlp._columns",
    .m_doc = "Attributes of many objects read as columns (C; see _columns.c).",
    .m_size = 0,
    .m_methods = columns_methods,
};

PyMODINIT_FUNC
PyInit__columns(void)
{
    return PyModule_Create(&columns_module);
}
