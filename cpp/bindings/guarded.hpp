// Every class of _core is declared with `guarded()`: calling the class is the only way Python
// makes one. pybind11 lets `cls.__new__(cls)` make an instance whose C++ value was never
// constructed, and a method called on it runs on unconstructed memory (pybind11 allocates the
// value lazily): a crash, where a Python user should get an error. So the class's __new__ refuses
// unless the class is being called (its metaclass's __call__, which runs __init__ next, and which
// pybind11 already checks constructed the value). Instances made in C++ (a returned object) never
// go through __new__.
#pragma once

#include <pybind11/pybind11.h>

namespace rlb::bindings {

// The tag: py::class_<T>(m, "Name", doc, guarded()).
struct guarded {};

namespace detail {

// The class being called on this thread, until its __new__ runs.
inline PyTypeObject*& constructing() {
  thread_local PyTypeObject* type = nullptr;
  return type;
}

inline PyObject* guarded_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  if (constructing() != type) {
    PyErr_Format(PyExc_TypeError,
                 "%.200s.__new__() alone makes an object with nothing in it: call %.200s(...)",
                 type->tp_name, type->tp_name);
    return nullptr;
  }
  constructing() = nullptr;
  return pybind11::detail::pybind11_object_new(type, args, kwargs);
}

// The metaclass's __call__: pybind11's, with the class named as the one __new__ may make.
inline PyObject* guarded_call(PyObject* type, PyObject* args, PyObject* kwargs) {
  PyTypeObject* outer = constructing();
  constructing() = reinterpret_cast<PyTypeObject*>(type);
  PyObject* self = pybind11::detail::pybind11_meta_call(type, args, kwargs);
  constructing() = outer;
  return self;
}

// pybind11's metaclass with that __call__; made once, never freed (every class refers to it).
inline PyObject* guarded_metaclass() {
  static PyObject* metaclass = [] {
    auto* base = reinterpret_cast<PyObject*>(pybind11::detail::get_internals().default_metaclass);
    PyType_Slot slots[] = {{Py_tp_call, reinterpret_cast<void*>(&guarded_call)}, {0, nullptr}};
    PyType_Spec spec = {"redis_leaderboard._core.guarded_metaclass", 0, 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
    PyObject* bases = PyTuple_Pack(1, base);
    if (bases == nullptr) throw pybind11::error_already_set();
    PyObject* made = PyType_FromSpecWithBases(&spec, bases);
    Py_DECREF(bases);
    if (made == nullptr) throw pybind11::error_already_set();
    return made;
  }();
  return metaclass;
}

}  // namespace detail
}  // namespace rlb::bindings

namespace pybind11::detail {
template <>
struct process_attribute<rlb::bindings::guarded>
    : process_attribute_default<rlb::bindings::guarded> {
  static void init(const rlb::bindings::guarded&, type_record* record) {
    record->metaclass = handle(rlb::bindings::detail::guarded_metaclass());
    record->custom_type_setup_callback = [](PyHeapTypeObject* heap_type) {
      heap_type->ht_type.tp_new = &rlb::bindings::detail::guarded_new;
    };
  }
};
}  // namespace pybind11::detail
