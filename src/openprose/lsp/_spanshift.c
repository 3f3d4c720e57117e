/* Moving the spans after an edit: openprose.lsp.incremental's `_shift_tail`, in C.
 *
 * An edit near the top of a 10,000-line program moves ~57,000 spans (their start and end;
 * their lines too when lines were added or removed). In Python each field of each span is a
 * getter, an int addition and a slot setter called through map(): ~100 ns, ~18 ms an edit.
 * Here each field is a read of the slot, a new int and a write of the slot.
 *
 * The fields are named by their slots' member descriptors (`Span.start`...), read once per
 * call: each must be an object slot of the spans' exact type, and every value in it an int;
 * otherwise TypeError before anything is changed for that span (a wrong table, never a
 * half-moved span). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define MAX_FIELDS 6

/* move(spans, first, fields, by): add `by` to each field of spans[first:]. */
static PyObject *
move(PyObject *self, PyObject *args)
{
    PyObject *spans, *fields;
    Py_ssize_t first, by;
    if (!PyArg_ParseTuple(args, "O!nO!n:move", &PyList_Type, &spans, &first, &PyTuple_Type,
                          &fields, &by)) {
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(fields);
    if (count > MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "move: too many fields");
        return NULL;
    }
    Py_ssize_t offsets[MAX_FIELDS];
    PyTypeObject *kind = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *field = PyTuple_GET_ITEM(fields, i);
        if (!Py_IS_TYPE(field, &PyMemberDescr_Type)) {
            PyErr_SetString(PyExc_TypeError, "move: a field is not a slot's descriptor");
            return NULL;
        }
        PyMemberDescrObject *member = (PyMemberDescrObject *)field;
        if (member->d_member->type != T_OBJECT_EX || (kind && kind != PyDescr_TYPE(field))) {
            PyErr_SetString(PyExc_TypeError, "move: fields of one class's object slots only");
            return NULL;
        }
        kind = PyDescr_TYPE(field);
        offsets[i] = member->d_member->offset;
    }
    if (by == 0 || count == 0) {
        Py_RETURN_NONE;
    }
    if (first < 0) {
        first = 0;
    }
    for (Py_ssize_t at = first; at < PyList_GET_SIZE(spans); at++) {
        PyObject *span = PyList_GET_ITEM(spans, at);
        if (!Py_IS_TYPE(span, kind)) {
            PyErr_Format(PyExc_TypeError, "move: item %zd is not a %s", at, kind->tp_name);
            return NULL;
        }
        PyObject *moved[MAX_FIELDS];
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *value = *(PyObject **)((char *)span + offsets[i]);
            Py_ssize_t number = -1;
            if (value == NULL || !PyLong_CheckExact(value)) {
                PyErr_Format(PyExc_TypeError, "move: item %zd holds a field not an int", at);
            }
            else if ((number = PyLong_AsSsize_t(value)) != -1 || !PyErr_Occurred()) {
                moved[i] = (by > 0 && number > PY_SSIZE_T_MAX - by)
                               ? PyErr_Format(PyExc_OverflowError, "move: out of range")
                               : PyLong_FromSsize_t(number + by);
            }
            if (PyErr_Occurred()) {
                for (Py_ssize_t j = 0; j < i; j++) {
                    Py_DECREF(moved[j]);
                }
                return NULL;
            }
        }
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject **slot = (PyObject **)((char *)span + offsets[i]);
            Py_SETREF(*slot, moved[i]);
        }
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"move", move, METH_VARARGS,
     "move(spans, first, fields, by): add `by` to the given int slots of spans[first:]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "openprose.lsp._spanshift", NULL, -1, methods,
};

PyMODINIT_FUNC
PyInit__spanshift(void)
{
    return PyModule_Create(&module);
}
