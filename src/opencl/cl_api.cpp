// Loading the ICD loader at run time: dlopen/dlsym (LoadLibrary/GetProcAddress on Windows)
// and the table of entry points, filled once per process.
#include "opencl/cl_api.h"

#include <cstdlib>
#include <cstring>

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace rg::ocl {

namespace {

#ifdef _WIN32
std::string last_system_error() {
  const DWORD code = GetLastError();
  char text[512] = {0};
  FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0, text, sizeof text,
                 nullptr);
  std::string message = text;
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
  return message + " (Windows error " + std::to_string(code) + ")";
}
void* open_library(const std::string& name, std::string* why) {
  HMODULE module = LoadLibraryA(name.c_str());
  if (module == nullptr) *why = last_system_error();
  return reinterpret_cast<void*>(module);
}
void close_library(void* handle) { FreeLibrary(reinterpret_cast<HMODULE>(handle)); }
// The address as a generic function pointer; the caller casts it to the entry point's type.
using AnyFunction = void (*)();
AnyFunction find_symbol(void* handle, const char* name) {
  return reinterpret_cast<AnyFunction>(GetProcAddress(reinterpret_cast<HMODULE>(handle), name));
}
#else
void* open_library(const std::string& name, std::string* why) {
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    *why = error != nullptr ? error : "dlopen failed";
  }
  return handle;
}
void close_library(void* handle) { dlclose(handle); }
using AnyFunction = void (*)();
AnyFunction find_symbol(void* handle, const char* name) {
  void* address = dlsym(handle, name);
  // POSIX guarantees a data pointer from dlsym converts to a function pointer; memcpy keeps
  // -Wpedantic quiet about the object-to-function cast.
  AnyFunction function = nullptr;
  static_assert(sizeof function == sizeof address, "function and data pointers differ in size");
  std::memcpy(&function, &address, sizeof function);
  return function;
}
#endif

}  // namespace

ClApi::~ClApi() {
  if (handle != nullptr) close_library(handle);
}

std::string opencl_library_name() {
  const char* chosen = std::getenv("RETROGRAD_OPENCL_LIBRARY");
  if (chosen != nullptr && chosen[0] != '\0') return chosen;
#ifdef _WIN32
  return "OpenCL.dll";
#else
  return "libOpenCL.so.1";
#endif
}

Result<std::unique_ptr<ClApi>> load_opencl_library(const std::string& library) {
  auto api = std::make_unique<ClApi>();
  api->library = library;
  std::string why;
  api->handle = open_library(library, &why);
  if (api->handle == nullptr) {
    return Status::error("no OpenCL loader: cannot load " + library + ": " + why);
  }
#define RG_OPENCL_RESOLVE(name)                                                                          \
  if (AnyFunction f = find_symbol(api->handle, #name); f != nullptr) {                                  \
    api->name = reinterpret_cast<decltype(api->name)>(f);                                               \
  } else {                                                                                              \
    return Status::error("the OpenCL loader " + library + " has no " #name " (an OpenCL 1.2 loader is needed)"); \
  }
  RG_OPENCL_FUNCTIONS(RG_OPENCL_RESOLVE)
#undef RG_OPENCL_RESOLVE
  return api;
}

Result<const ClApi*> opencl_api() {
  // Loaded once; a failure is kept and returned to every caller.
  static const Result<const ClApi*> loaded = []() -> Result<const ClApi*> {
    auto api = load_opencl_library(opencl_library_name());
    if (!api.ok()) return api.status();
    return api.take().release();  // never unloaded: see the header
  }();
  return loaded;
}

}  // namespace rg::ocl
