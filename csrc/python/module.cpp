// mps_ops._C: the Python face of the extension. Policy decisions (which
// overloads to register) are made in Python (mps_ops/_registry.py); the
// extension only carries them out. One part per role, in headers included
// here only: one translation unit, because torch's Python headers cost about
// as much to compile as all of this code.
#include "audit_support.h"
#include "error_check_bindings.h"
#include "introspection.h"
#include "registration.h"
#include "shader_libraries.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "mps_ops native extension";
  mps_ops::python::bind_registration(m);
  mps_ops::python::bind_introspection(m);
  mps_ops::python::bind_shader_libraries(m);
  mps_ops::python::bind_audit_support(m);
  mps_ops::python::bind_error_checks(m);
}
