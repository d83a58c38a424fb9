// Kernels of test/test_compute_model.py: Metal's compute model, one feature
// per kernel, run through compile_shader on every backend that can (the
// emulator builds this source at run time; tools/cuda_build.py builds it
// ahead for the CUDA backend, which has no compiler at run time).
#include <metal_stdlib>
using namespace metal;

// Each thread's builtins on a 2-D grid whose edge groups are clipped.
kernel void where_2d(device uint* out [[buffer(0)]],
                     constant uint& width [[buffer(1)]],
                     uint2 pos [[thread_position_in_grid]],
                     uint2 tid [[thread_position_in_threadgroup]],
                     uint2 gid [[threadgroup_position_in_grid]],
                     uint2 tpg [[threads_per_threadgroup]],
                     uint index [[thread_index_in_threadgroup]]) {
  device uint* o = out + 5 * (pos.y * width + pos.x);
  o[0] = tid.x; o[1] = tid.y; o[2] = gid.x * 100 + gid.y; o[3] = tpg.x * 100 + tpg.y; o[4] = index;
}

kernel void count_3d(device atomic_uint* hits [[buffer(0)]],
                     uint3 pos [[thread_position_in_grid]], uint3 grid [[threads_per_grid]]) {
  atomic_fetch_add_explicit(&hits[(pos.z * grid.y + pos.y) * grid.x + pos.x], 1u, memory_order_relaxed);
}

// Each 3-D threadgroup, clipped at the grid's edges, sums its threads'
// values through threadgroup memory between barriers; every thread writes
// its group's sum and its own index in the group.
kernel void group_sum_3d(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                         uint3 pos [[thread_position_in_grid]], uint3 grid [[threads_per_grid]],
                         uint t [[thread_index_in_threadgroup]], uint3 tpg [[threads_per_threadgroup]]) {
  threadgroup float values[64];
  const uint i = (pos.z * grid.y + pos.y) * grid.x + pos.x;
  const uint n = tpg.x * tpg.y * tpg.z;
  values[t] = in[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = 32; stride > 0; stride /= 2) {
    if (t < stride && t + stride < n) values[t] += values[t + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[2 * i] = values[0];
  out[2 * i + 1] = float(t);
}

kernel void reverse_in_groups(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]],
                              uint n [[threads_per_threadgroup]]) {
  threadgroup float tile[64];
  tile[t] = in[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = tile[n - 1 - t];
}

kernel void group_sum(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                      threadgroup float* partial [[threadgroup(0)]],
                      uint i [[thread_position_in_grid]], uint g [[threadgroup_position_in_grid]],
                      uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                      uint n_sg [[simdgroups_per_threadgroup]]) {
  float s = simd_sum(in[i]);
  if (lane == 0) partial[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float v = lane < n_sg ? partial[lane] : 0.0f;
    v = simd_sum(v);
    if (lane == 0) out[g] = v;
  }
}

kernel void split_by_lane(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  if (lane < 10) {
    out[i] = simd_sum(in[i]);
  } else {
    out[i] = simd_sum(in[i]) + 1000;
  }
}

kernel void split_on_one_line(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  out[i] = lane < 10 ? simd_sum(in[i]) : simd_max(in[i]);
}

// Collectives under a data-dependent branch: each runs over the lanes of its
// simdgroup that took the same branch, scans in lane order.
kernel void split_by_value(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  const int x = in[i];
  device int* o = out + 4 * i;
  if (x % 3 == 0) {
    o[0] = simd_sum(x);
    o[1] = simd_prefix_exclusive_sum(x);
    o[2] = simd_broadcast_first(x);
    o[3] = int(popcount(uint(ulong(simd_ballot(true)))));
  } else {
    o[0] = simd_max(x);
    o[1] = simd_prefix_inclusive_sum(x);
    o[2] = simd_min(x);
    o[3] = simd_is_first() ? 1 : 0;
  }
}

kernel void scans(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  int x = in[i];
  device int* o = out + 8 * i;
  o[0] = simd_prefix_inclusive_sum(x);
  o[1] = simd_prefix_exclusive_sum(x);
  o[2] = simd_prefix_exclusive_product(x % 3 + 1);
  o[3] = simd_min(x);
  o[4] = simd_max(x);
  o[5] = simd_and(x | 1);
  o[6] = simd_or(x);
  o[7] = simd_xor(x);
}

kernel void shuffles(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  float x = in[i];
  device float* o = out + 10 * i;
  o[0] = simd_shuffle(x, (lane + 5) % 32);
  o[1] = simd_shuffle_down(x, 3u);
  o[2] = simd_shuffle_up(x, 2u);
  o[3] = simd_shuffle_xor(x, 1u);
  o[4] = simd_shuffle_rotate_down(x, 4u);
  o[5] = simd_broadcast(x, 7u);
  o[6] = simd_broadcast_first(x);
  o[7] = simd_shuffle_and_fill_down(x, -x, 2u);
  o[8] = float(simd_any(x > 30.0f)) + 2.0f * float(simd_all(x >= 0.0f)) + 4.0f * float(simd_is_first());
  o[9] = float(ulong(simd_ballot(lane % 2 == 0)) == 0x55555555ul);
}

// The collectives of a threadgroup whose last simdgroup is partial (its size
// not a multiple of 32, or clipped at the grid's end).
kernel void partial_simdgroups(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
  const int x = in[i];
  device int* o = out + 6 * i;
  o[0] = simd_sum(x);
  o[1] = simd_prefix_inclusive_sum(x);
  o[2] = simd_max(x);
  o[3] = int(popcount(uint(ulong(simd_ballot(x > 0)))));
  o[4] = simd_broadcast_first(x);
  o[5] = simd_prefix_exclusive_sum(x);
}

kernel void histogram(device const uint* in [[buffer(0)]], device atomic_uint* bins [[buffer(1)]],
                      device atomic_int* group_max [[buffer(2)]],
                      uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]]) {
  threadgroup atomic_int local_max;
  if (t == 0) atomic_store_explicit(&local_max, 0, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&bins[in[i] % 16], 1u, memory_order_relaxed);
  atomic_fetch_max_explicit(&local_max, int(in[i]), memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (t == 0) atomic_fetch_max_explicit(group_max, atomic_load_explicit(&local_max, memory_order_relaxed),
                                        memory_order_relaxed);
}

kernel void half_and_bfloat(device const float* in [[buffer(0)]], device half* h [[buffer(1)]],
                            device bfloat* b [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  h[i] = half(in[i]) * half(3.0f) + half(0.1f);
  b[i] = bfloat(in[i]) * bfloat(3.0f) + bfloat(0.1f);
}

kernel void half_turns(device const float* in [[buffer(0)]], device float* sines [[buffer(1)]],
                       device float* cosines [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  sines[i] = sinpi(in[i]);
  cosines[i] = cospi(in[i]);
}
