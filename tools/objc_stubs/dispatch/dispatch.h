// Stub (see README.md): the libdispatch calls mps_ops uses. Under
// Objective-C, dispatch objects are Objective-C objects, as in Apple's
// headers (OS_OBJECT_USE_OBJC).
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __OBJC__
#include <objc/NSObject.h>
@protocol OS_dispatch_object <NSObject>
@end
typedef NSObject<OS_dispatch_object>* dispatch_object_t;
@protocol OS_dispatch_queue <OS_dispatch_object>
@end
typedef NSObject<OS_dispatch_queue>* dispatch_queue_t;
@protocol OS_dispatch_data <OS_dispatch_object>
@end
typedef NSObject<OS_dispatch_data>* dispatch_data_t;
#else
typedef struct dispatch_object_s* dispatch_object_t;
typedef struct dispatch_queue_s* dispatch_queue_t;
typedef struct dispatch_data_s* dispatch_data_t;
#endif

#pragma clang assume_nonnull begin

#ifdef __BLOCKS__
typedef void (^dispatch_block_t)(void);

#ifdef __cplusplus
extern "C" {
#endif
// Submits block to queue and returns once it has run.
void dispatch_sync(dispatch_queue_t queue, __attribute__((__noescape__)) dispatch_block_t block);
// A data object over buffer; the default destructor copies the bytes now.
dispatch_data_t dispatch_data_create(const void* buffer, size_t size,
                                     dispatch_queue_t _Nullable queue,
                                     dispatch_block_t _Nullable destructor);
#ifdef __cplusplus
}
#endif
#endif  // __BLOCKS__

#define DISPATCH_DATA_DESTRUCTOR_DEFAULT NULL

typedef void (*dispatch_function_t)(void* _Nullable);

#ifdef __cplusplus
extern "C" {
#endif
void dispatch_release(dispatch_object_t object);
void dispatch_retain(dispatch_object_t object);
// Queue-specific data: a value per (queue, key); dispatch_get_specific reads
// it for the queue the calling block runs on (or that queue's targets).
void dispatch_queue_set_specific(dispatch_queue_t queue, const void* key, void* _Nullable context,
                                 dispatch_function_t _Nullable destructor);
void* _Nullable dispatch_queue_get_specific(dispatch_queue_t queue, const void* key);
void* _Nullable dispatch_get_specific(const void* key);
#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end
