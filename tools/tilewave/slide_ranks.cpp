#include "tools/tilewave/slide_ranks.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

namespace tw::cli {

std::unique_ptr<Ranks> open_mpi_slide_ranks();  // mpi_ranks.cpp, or none without MPI

namespace {
bool g_disabled = false;
bool g_opened = false;
std::unique_ptr<Ranks> g_ranks;
}  // namespace

Ranks* slide_ranks() {
  if (g_disabled) return nullptr;
  if (!g_opened) {
    g_opened = true;
    g_ranks = open_mpi_slide_ranks();
  }
  return g_ranks.get();
}

void disable_slide_ranks() {
  g_disabled = true;
}

bool is_lead_rank() {
  const Ranks* r = g_disabled ? nullptr : g_ranks.get();
  return !r || r->rank() == 0;
}

void end_slide_ranks_after_error() {
  if (g_disabled || !g_ranks) return;
  std::fflush(stderr);
  if (g_ranks->rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
  g_ranks->abort("an error");
}

}  // namespace tw::cli
