// The OpenCL 1.2 entry points retrograd uses, resolved at run time from the ICD loader
// (libOpenCL.so.1, OpenCL.dll): the binary never links libOpenCL, so it starts on a machine
// without any OpenCL and says why the GPU is off. Only Khronos's headers are compiled against.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <memory>
#include <string>

#include "base/status.h"

namespace rg::ocl {

// X(name) for every entry point: the table's members and the names looked up.
#define RG_OPENCL_FUNCTIONS(X)  \
  X(clGetPlatformIDs)           \
  X(clGetPlatformInfo)          \
  X(clGetDeviceIDs)             \
  X(clGetDeviceInfo)            \
  X(clCreateContext)            \
  X(clReleaseContext)           \
  X(clCreateCommandQueue)       \
  X(clReleaseCommandQueue)      \
  X(clCreateBuffer)             \
  X(clCreateSubBuffer)          \
  X(clReleaseMemObject)         \
  X(clCreateProgramWithSource)  \
  X(clCreateProgramWithBinary)  \
  X(clGetProgramInfo)           \
  X(clBuildProgram)             \
  X(clGetProgramBuildInfo)      \
  X(clReleaseProgram)           \
  X(clCreateKernel)             \
  X(clReleaseKernel)            \
  X(clSetKernelArg)             \
  X(clGetKernelWorkGroupInfo)   \
  X(clEnqueueNDRangeKernel)     \
  X(clEnqueueReadBuffer)        \
  X(clEnqueueWriteBuffer)       \
  X(clEnqueueFillBuffer)        \
  X(clEnqueueCopyBuffer)        \
  X(clFlush)                    \
  X(clFinish)                   \
  X(clWaitForEvents)            \
  X(clGetEventInfo)             \
  X(clGetEventProfilingInfo)    \
  X(clReleaseEvent)

// One pointer per entry point, typed from the header's own prototype (CL_API_CALL included,
// which is __stdcall on 32-bit Windows). Every member is non-null in a loaded table.
struct ClApi {
#define RG_OPENCL_MEMBER(name) decltype(&::name) name = nullptr;
  RG_OPENCL_FUNCTIONS(RG_OPENCL_MEMBER)
#undef RG_OPENCL_MEMBER

  std::string library;     // the file name it was loaded from
  void* handle = nullptr;  // dlopen / LoadLibrary handle; closed by the destructor

  ClApi() = default;
  ClApi(const ClApi&) = delete;
  ClApi& operator=(const ClApi&) = delete;
  ~ClApi();
};

// The loader's file name: $RETROGRAD_OPENCL_LIBRARY when set, else libOpenCL.so.1 (OpenCL.dll
// on Windows).
std::string opencl_library_name();

// Loads `library` and resolves every entry point. Errors say which: the library cannot be
// opened (with the system's reason) or lacks a function (a loader older than OpenCL 1.2).
Result<std::unique_ptr<ClApi>> load_opencl_library(const std::string& library);

// The process's table, loaded on first use from opencl_library_name() and kept until exit
// (drivers leave threads running their code). The same error on every call when it failed.
Result<const ClApi*> opencl_api();

}  // namespace rg::ocl
