#include "cfuse.h"

FILE *cfuse_stderr(void) { return stderr; }
