// OpenCL error codes as Status messages that name the call and the code:
// "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11)".
#pragma once

#include <string>

#include "base/status.h"
#include "opencl/cl_api.h"

namespace rg::ocl {

// "CL_OUT_OF_RESOURCES"; "unknown OpenCL error" for a code no header names.
const char* cl_error_name(cl_int code);

// Ok for CL_SUCCESS, else "<call> failed: <NAME> (<code>)".
Status cl_status(const std::string& call, cl_int code);

// True for the codes a device gives when it is out of memory: CL_MEM_OBJECT_ALLOCATION_FAILURE,
// CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY. Drivers that allocate lazily return them from
// the first command that touches a buffer, not from clCreateBuffer.
bool is_out_of_memory(cl_int code);

}  // namespace rg::ocl

// Calls api.fn(args...) and returns its Status from the enclosing function when it is not
// CL_SUCCESS: RG_CL_TRY(api, clFinish, queue) fails with "clFinish failed: ...".
#define RG_CL_TRY(api, fn, ...)                                                   \
  do {                                                                            \
    const cl_int rg_cl_code_ = (api).fn(__VA_ARGS__);                             \
    if (rg_cl_code_ != CL_SUCCESS) return ::rg::ocl::cl_status(#fn, rg_cl_code_); \
  } while (0)
