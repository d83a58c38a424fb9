// Stub (see README.md): only MPSCommandBuffer, which PyTorch's MPSStream.h
// names (its command buffers are MPSCommandBuffers).
#pragma once

#include <Metal/Metal.h>

API_AVAILABLE(macos(11.0))
@interface MPSCommandBuffer : NSObject <MTLCommandBuffer>
@property(readonly, retain) id<MTLCommandBuffer> commandBuffer;
@end
