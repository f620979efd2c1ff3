// Capability tests run when a device is opened (src/opencl/capabilities.cpp): fp16
// storage through vstore_half_rte / vload_half, and a __local array of a chosen size.
// OpenCL C 1.2; no extension needed.
#pragma OPENCL FP_CONTRACT OFF

// h[i] = x[i] rounded to half (to nearest even); back[i] = h[i] read back as float.
// n elements; h holds n halves.
__kernel void f16_storage_probe(uint n, __global const float* x, __global half* h, __global float* back) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  vstore_half_rte(x[i], i, h);
  back[i] = vload_half(i, h);
}

// One work-group. Fills scratch[0, words) with a hash of the index, then work-item l sums
// the words read from the far end at l, l + size, ..., so every word is written by one
// item and read by another: sums[l] (size entries) shows whether all of scratch held.
__kernel void local_memory_probe(uint words, __local uint* scratch, __global uint* sums) {
  const uint l = get_local_id(0);
  const uint size = get_local_size(0);
  for (uint w = l; w < words; w += size) scratch[w] = w * 2654435761u + 12345u;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint sum = 0;
  for (uint w = l; w < words; w += size) sum += scratch[words - 1u - w];
  sums[l] = sum;
}

// The largest-allocation test: p[w] = allocation_probe_value(w, seed) for the first word of
// every 4 KiB page (w = 0, 1024, 2048, ...) and the last word, a grid-stride loop over 64-bit
// indices. A word per page is enough to make a driver that allocates lazily (PoCL: host
// memory, overcommitted) commit all of it. Not clEnqueueFillBuffer: NVIDIA's (seen on an
// H100, driver 580) faults once a fill reaches past 2^32 pattern words (16 GiB), and the
// fault leaves the process's OpenCL unusable. The host reads words back on both sides of
// 2^32 (capabilities.cpp computes the same values).
uint allocation_probe_value(ulong w, uint seed) { return (uint)w ^ ((uint)(w >> 32) * 0x9e3779b9u) ^ seed; }

__kernel void allocation_probe_fill(__global uint* p, ulong words, uint seed) {
  for (ulong w = get_global_id(0) * 1024; w < words; w += get_global_size(0) * 1024) {
    p[w] = allocation_probe_value(w, seed);
  }
  if (get_global_id(0) == 0) p[words - 1] = allocation_probe_value(words - 1, seed);
}
