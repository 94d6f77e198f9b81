#pragma once

#include "engine/op_registry.hpp"

namespace tw::cli {

// A registered op as a command; argv[first] is its first argument.
int run_op_command(const OpDef& op, int argc, char** argv, int first);

// Each returns the process exit status; errors are thrown (main prints them).
int cmd_info(int argc, char** argv);
int cmd_pyramid(int argc, char** argv);
int cmd_devices(int argc, char** argv);
int cmd_features(int argc, char** argv);  // tools/tilewave/cmd_features.cpp
// A family of ops under one word (`filter OP`, `math OP`).
bool is_family(const std::string& word);
int cmd_family(const std::string& family, int argc, char** argv);
int cmd_ops(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_nuclei(int argc, char** argv);
int cmd_batch(int argc, char** argv);      // tools/tilewave/cmd_batch.cpp
int cmd_serve(int argc, char** argv);      // tools/tilewave/cmd_serve.cpp
int cmd_region(int argc, char** argv);     // tools/tilewave/cmd_region.cpp
int cmd_thumbnail(int argc, char** argv);  // tools/tilewave/cmd_thumbnail.cpp

}  // namespace tw::cli
