// Stub (see README.md): only the MPSGraph classes PyTorch's MPSStream.h names
// as pointer types.
#pragma once

#include <MetalPerformanceShaders/MetalPerformanceShaders.h>

API_AVAILABLE(macos(11.0))
@interface MPSGraphObject : NSObject
@end

API_AVAILABLE(macos(11.0))
@interface MPSGraph : MPSGraphObject
@end

API_AVAILABLE(macos(11.0))
@interface MPSGraphExecutionDescriptor : MPSGraphObject
@end

API_AVAILABLE(macos(11.0))
@interface MPSGraphCompilationDescriptor : MPSGraphObject
@end

API_AVAILABLE(macos(11.0))
@interface MPSGraphTensorData : MPSGraphObject
@end
