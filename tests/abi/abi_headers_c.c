/* Compiles the ABI headers and their layout checks as C, so they stay valid C. */
#include "ncclscope/abi/layout_asserts.h"

int ncclscope_abi_headers_are_c(void) { return (int)sizeof(ncclscope_net_v12_t); }
