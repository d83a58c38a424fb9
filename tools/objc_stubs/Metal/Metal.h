// Stub (see README.md): the Metal subset mps_ops and PyTorch's MPS headers
// use. Selectors, types, nullability and availability follow Apple's
// documentation of MTLDevice, MTLLibrary, MTLFunction, MTLCompileOptions,
// MTLComputePipelineState, MTLComputePipelineReflection, MTLBinding,
// MTLPipelineOption, MTLCommandQueue, MTLCommandBuffer,
// MTLComputeCommandEncoder, MTLBuffer, MTLSharedEvent and MTLSize.
#pragma once

#include <Foundation/Foundation.h>
#include <dispatch/dispatch.h>

#pragma clang assume_nonnull begin

typedef struct {
  NSUInteger width, height, depth;
} MTLSize;

static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
  MTLSize size = {width, height, depth};
  return size;
}

typedef NS_ENUM(NSUInteger, MTLLanguageVersion){
    MTLLanguageVersion2_4 API_AVAILABLE(macos(12.0)) = (2 << 16) + 4,
    MTLLanguageVersion3_0 API_AVAILABLE(macos(13.0)) = (3 << 16) + 0,
    MTLLanguageVersion3_1 API_AVAILABLE(macos(14.0)) = (3 << 16) + 1,
#if MPS_OPS_STUB_MACOS_SDK >= 150000
    MTLLanguageVersion3_2 API_AVAILABLE(macos(15.0)) = (3 << 16) + 2,
#endif
};

#if MPS_OPS_STUB_MACOS_SDK >= 150000
typedef NS_ENUM(NSInteger, MTLMathMode){
    MTLMathModeSafe = 0,
    MTLMathModeRelaxed = 1,
    MTLMathModeFast = 2,
} API_AVAILABLE(macos(15.0));

typedef NS_ENUM(NSInteger, MTLMathFloatingPointFunctions){
    MTLMathFloatingPointFunctionsFast = 0,
    MTLMathFloatingPointFunctionsPrecise = 1,
} API_AVAILABLE(macos(15.0));
#endif

// Resource options (newBufferWithLength:options:): the storage mode sits
// at bit 4 (MTLResourceStorageModeShift); shared storage is mode 0.
typedef NS_OPTIONS(NSUInteger, MTLResourceOptions){
    MTLResourceCPUCacheModeDefaultCache API_AVAILABLE(macos(10.11)) = 0,
    MTLResourceStorageModeShared API_AVAILABLE(macos(10.11)) = 0 << 4,
    MTLResourceStorageModePrivate API_AVAILABLE(macos(10.11)) = 2 << 4,
};

@protocol MTLDevice;
@protocol MTLCommandBuffer;

@interface MTLCompileOptions : NSObject <NSCopying>
@property(readwrite, nonatomic) MTLLanguageVersion languageVersion API_AVAILABLE(macos(10.11));
#if MPS_OPS_STUB_MACOS_SDK >= 150000
@property(readwrite, nonatomic) BOOL fastMathEnabled
    API_DEPRECATED("Use mathMode instead", macos(10.11, 15.0));
@property(readwrite, nonatomic) MTLMathMode mathMode API_AVAILABLE(macos(15.0));
@property(readwrite, nonatomic)
    MTLMathFloatingPointFunctions mathFloatingPointFunctions API_AVAILABLE(macos(15.0));
#else
@property(readwrite, nonatomic) BOOL fastMathEnabled;
#endif
@end

@protocol MTLResource <NSObject>
@property(nullable, copy, atomic) NSString* label;
@property(readonly) id<MTLDevice> device;
@end

@protocol MTLBuffer <MTLResource>
@property(readonly) NSUInteger length;
- (void*)contents NS_RETURNS_INNER_POINTER;
@end

@protocol MTLFunction <NSObject>
@property(nullable, copy, atomic) NSString* label API_AVAILABLE(macos(10.12));
@property(readonly) id<MTLDevice> device;
@property(readonly) NSString* name;
@end

@protocol MTLLibrary <NSObject>
@property(nullable, copy, atomic) NSString* label;
@property(readonly) id<MTLDevice> device;
- (nullable id<MTLFunction>)newFunctionWithName:(NSString*)functionName;
@property(readonly) NSArray<NSString*>* functionNames;
@end

@protocol MTLComputePipelineState <NSObject>
@property(nullable, readonly) NSString* label;
@property(readonly) id<MTLDevice> device;
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readonly) NSUInteger threadExecutionWidth;
@property(readonly) NSUInteger staticThreadgroupMemoryLength API_AVAILABLE(macos(10.13));
@end

// Pipeline reflection (newComputePipelineStateWithFunction:options:reflection:error:).
// BindingInfo replaced ArgumentInfo (same value) in macOS 13.
typedef NS_OPTIONS(NSUInteger, MTLPipelineOption){
    MTLPipelineOptionNone = 0,
    MTLPipelineOptionBindingInfo API_AVAILABLE(macos(13.0)) = 1 << 0,
    MTLPipelineOptionBufferTypeInfo API_AVAILABLE(macos(10.11)) = 1 << 1,
};

typedef NS_ENUM(NSInteger, MTLBindingType){
    MTLBindingTypeBuffer = 0,
    MTLBindingTypeThreadgroupMemory = 1,
    MTLBindingTypeTexture = 2,
    MTLBindingTypeSampler = 3,
} API_AVAILABLE(macos(13.0));

API_AVAILABLE(macos(13.0))
@protocol MTLBinding <NSObject>
@property(readonly) NSString* name;
@property(readonly) MTLBindingType type;
@property(readonly) NSUInteger index;
@property(readonly, getter=isUsed) BOOL used;
@property(readonly, getter=isArgument) BOOL argument;
@end

@interface MTLComputePipelineReflection : NSObject
@property(readonly) NSArray<id<MTLBinding>>* bindings API_AVAILABLE(macos(13.0));
@end

typedef MTLComputePipelineReflection* __autoreleasing MTLAutoreleasedComputePipelineReflection;

@protocol MTLCommandEncoder <NSObject>
@property(readonly) id<MTLDevice> device;
@property(nullable, copy, atomic) NSString* label;
- (void)endEncoding;
@end

@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void*)bytes
          length:(NSUInteger)length
         atIndex:(NSUInteger)index API_AVAILABLE(macos(10.11));
- (void)setBuffer:(nullable id<MTLBuffer>)buffer
           offset:(NSUInteger)offset
          atIndex:(NSUInteger)index;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid
       threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)dispatchThreads:(MTLSize)threadsPerGrid
    threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup API_AVAILABLE(macos(10.13));
@end

typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer>);

@protocol MTLCommandBuffer <NSObject>
@property(readonly) id<MTLDevice> device;
- (void)commit;
- (void)waitUntilCompleted;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (nullable id<MTLComputeCommandEncoder>)computeCommandEncoder;
@end

@protocol MTLCommandQueue <NSObject>
@property(readonly) id<MTLDevice> device;
- (nullable id<MTLCommandBuffer>)commandBuffer;
@end

@protocol MTLEvent <NSObject>
@property(nullable, readonly) id<MTLDevice> device;
@end

@protocol MTLSharedEvent <MTLEvent>
@property(readwrite) uint64_t signaledValue;
@end

@protocol MTLDevice <NSObject>
@property(readonly) NSString* name;
@property(readonly) MTLSize maxThreadsPerThreadgroup API_AVAILABLE(macos(10.11));
@property(readonly) NSUInteger maxThreadgroupMemoryLength API_AVAILABLE(macos(10.13));
- (nullable id<MTLCommandQueue>)newCommandQueue;
- (nullable id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (nullable id<MTLLibrary>)newLibraryWithData:(dispatch_data_t)data
                                        error:(__autoreleasing NSError**)error;
- (nullable id<MTLLibrary>)newLibraryWithSource:(NSString*)source
                                        options:(nullable MTLCompileOptions*)options
                                          error:(__autoreleasing NSError**)error;
- (nullable id<MTLComputePipelineState>)
    newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                  error:(__autoreleasing NSError**)error;
- (nullable id<MTLComputePipelineState>)
    newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                options:(MTLPipelineOption)options
                             reflection:(MTLAutoreleasedComputePipelineReflection* _Nullable)reflection
                                  error:(__autoreleasing NSError**)error;
@end

#ifdef __cplusplus
extern "C" {
#endif
id<MTLDevice> _Nullable MTLCreateSystemDefaultDevice(void) API_AVAILABLE(macos(10.11));
#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end
