// Stub (see README.md): the __MAC_* version constants the macOS SDK defines.
#pragma once

#ifndef MPS_OPS_STUB_MACOS_SDK
#define MPS_OPS_STUB_MACOS_SDK 150000
#endif

#define __MAC_13_0 130000
#define __MAC_14_0 140000
#if MPS_OPS_STUB_MACOS_SDK >= 150000
#define __MAC_15_0 150000
#endif
#define __MAC_OS_X_VERSION_MAX_ALLOWED MPS_OPS_STUB_MACOS_SDK
