// The kernel is static inline in include/CByteClasses.h; a C target needs one source file.
#include "CByteClasses.h"
