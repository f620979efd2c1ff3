// The stb implementations (headers from Debian's libstb-dev), compiled once, here, in a
// library of their own built without our warning flags (third-party code). Compiling them
// rather than linking libstb.so means the binary needs no libstb at run time (it is copied
// to old PCs) and a cross build needs only the headers.

// Decoding: only the formats the image-folder reader accepts (less code facing untrusted
// files). PNG, JPEG and BMP; 16-bit PNGs arrive as 8 bits.
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_NO_HDR
#define STBI_NO_LINEAR
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"

#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include "stb_image_resize.h"
