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

static PyObject *
attribute(PyObject *object, PyObject *name)
{
    PyTypeObject *type = Py_TYPE(object);
    if (type->tp_getattro == PyObject_GenericGetAttr) {
        PyObject *descr = _PyType_Lookup(type, name); /* borrowed */
        if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
            if (member->type == T_OBJECT_EX && !(member->flags & PY_AUDIT_READ)) {
                PyObject *value = *(PyObject **)((char *)object + member->offset);
                if (value != NULL) {
                    return Py_NewRef(value);
                }
            }
        }
        else if (descr != NULL && Py_TYPE(descr)->tp_descr_get == NULL &&
                 type->tp_dictoffset == 0 && !(type->tp_flags & Py_TPFLAGS_MANAGED_DICT)) {
            return Py_NewRef(descr); /* a plain class attribute, no instance dict to hide it */
        }
    }
    return PyObject_GetAttr(object, name);
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
    /* Row by row: each object's fields are read while it is in the CPU caches. */
    for (Py_ssize_t row = 0; row < rows; row++) {
        PyObject *object = PyList_GET_ITEM(objects, row);
        for (Py_ssize_t column = 0; column < width; column++) {
            PyObject *value = attribute(object, PyTuple_GET_ITEM(names, column));
            if (value == NULL) {
                Py_DECREF(objects);
                Py_DECREF(result);
                return NULL;
            }
            PyList_SET_ITEM(PyList_GET_ITEM(result, column), row, value);
        }
    }
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
