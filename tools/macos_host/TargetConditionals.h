/* check_objc.sh --host-stubs: the few TargetConditionals.h macros torch's
 * headers test, with the values Apple's SDK gives a macOS build (not iOS,
 * not a simulator). Compiled with __APPLE__ defined so that torch's headers
 * take their macOS branches (SymInt's size_t operators, Scalar's `long`). */
#ifndef MPS_OPS_TARGET_CONDITIONALS_H
#define MPS_OPS_TARGET_CONDITIONALS_H
#define TARGET_OS_MAC 1
#define TARGET_OS_OSX 1
#define TARGET_OS_IPHONE 0
#define TARGET_OS_IOS 0
#define TARGET_OS_SIMULATOR 0
#define TARGET_IPHONE_SIMULATOR 0
#endif
