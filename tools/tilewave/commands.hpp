#pragma once

namespace tw::cli {

// Each returns the process exit status; errors are thrown (main prints them).
int cmd_info(int argc, char** argv);
int cmd_pyramid(int argc, char** argv);
int cmd_devices(int argc, char** argv);
int cmd_reconstruct(int argc, char** argv);
int cmd_fill_holes(int argc, char** argv);
int cmd_hdome(int argc, char** argv);
int cmd_edt(int argc, char** argv);
int cmd_filter(int argc, char** argv);
int cmd_stats(int argc, char** argv);

}  // namespace tw::cli
