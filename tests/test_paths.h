// This build's paths for the test programs: the retrograd binary they run and the source tree
// they read (data/, kernels/, the fuzz corpora). Defined in test_paths.cpp, which Meson writes
// into the build folder from tests/test_paths.cpp.in and compiles once: a path on every test
// program's command line made each of their compiles miss ccache in a clone in another folder.
#pragma once

extern const char retrograd_binary_path[];
extern const char retrograd_source_dir[];
