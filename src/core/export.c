/* Anchors the shared library; every exported symbol comes from ladle_static. */
#include "ladle/ladle.h"
