// The `tessel` program: everything it does lives in the libraries; this only sets how the
// process's allocator keeps memory and hands over argv.
#include <malloc.h>

#include <iostream>

#include "tools/cli.h"

int main(int argc, char** argv) {
  // The references and the tile level allocate and free matrices of a few MiB per chunk or
  // block on every core. glibc's default maps such blocks fresh and returns them at free, so
  // each reuse cleared its pages again in the kernel: a third of chunk_state CT4's reference
  // (11.7 -> 7.0 s, bench/README.md). Blocks under 256 MiB now come from the heap, which keeps
  // up to 1 GiB free before it trims; tensors of 256 MiB and more are still mapped and unmapped.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return tessel::cli::run_cli(argc, argv, std::cout, std::cerr);
}
