// The fp16 arithmetic test (src/opencl/capabilities.cpp): half values multiplied and added
// in half precision through cl_khr_fp16. Its own file because it does not build at all
// on a device without the extension (PoCL 3.1, NVIDIA's OpenCL), which is the answer.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL FP_CONTRACT OFF

// out[i] = a[i] * b[i] + a[i], each operation rounded to half; n elements.
__kernel void f16_arithmetic_probe(uint n, __global const half* a, __global const half* b, __global half* out) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const half x = a[i];
  const half y = b[i];
  const half product = x * y;
  out[i] = product + x;
}
