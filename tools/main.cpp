// The `tessel` program: everything it does lives in the libraries; this only hands over argv.
#include <iostream>

#include "tools/cli.h"

int main(int argc, char** argv) { return tessel::cli::run_cli(argc, argv, std::cout, std::cerr); }
