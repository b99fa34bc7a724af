// The ABI headers compile as C (abi_headers_c.c is built by the C compiler with the layout asserts).
#include <gtest/gtest.h>

#include "ncclscope/abi/net.h"

extern "C" int ncclscope_abi_headers_are_c(void);

TEST(AbiHeaders, CompileAsCWithTheSameLayout) {
  EXPECT_EQ(ncclscope_abi_headers_are_c(), static_cast<int>(sizeof(ncclscope_net_v12_t)));
}
