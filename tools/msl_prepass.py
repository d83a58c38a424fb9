"""Command-line entry of the emulator prepass; the code lives in
mps_ops/_prepass.py (loaded by path: importing the mps_ops package would need
the built extension)."""

import importlib.util
import os
import sys

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mps_ops", "_prepass.py")
_spec = importlib.util.spec_from_file_location("mps_ops_prepass", _PATH)
_module = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mps_ops_prepass", _module)
_spec.loader.exec_module(_module)

PrepassError = _module.PrepassError
Token = _module.Token
matching = _module._matching
scan = _module.scan
generate = _module.generate
generate_cuda = _module.generate_cuda
preprocess = _module.preprocess
slot_masks = _module.slot_masks
instantiated_kernels = _module.instantiated_kernels
translate = _module.translate
write_if_changed = _module.write_if_changed
KERNEL_INCLUDE = _module.KERNEL_INCLUDE
EMULATOR_INCLUDES = _module.EMULATOR_INCLUDES
MSL_INCLUDE = _module.MSL_INCLUDE
CUDA_INCLUDE_DIRS = _module.CUDA_INCLUDE_DIRS
PREBUILT_SHADERS = _module.PREBUILT_SHADERS
shader_key = _module.shader_key

if __name__ == "__main__":
    sys.exit(_module.main())
