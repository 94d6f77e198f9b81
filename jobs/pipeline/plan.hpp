#pragma once
// The planner: resolves each step's images, checks every step's options and
// pixel types against what the steps before it make, and marks the
// barriers — all before any pixel is read, so a bad pipeline fails at once
// with one line naming its step and leaves nothing behind.
//
// Steps between barriers are streamed: each is a source computed on reads,
// so a tile is carried through a whole run of them (every step reading the
// one before with its halo) and no intermediate image exists. A barrier
// (a whole-image op: reconstruct, fill-holes, h-dome, EDT, Canny; a
// reduction; Otsu's threshold) reads its whole input into the engine's
// out-of-core tile store and gives its result from there. A streamed step
// that several passes read (two barriers, or a barrier and the writer), or
// that its pass would compute more than twice per tile (steps reading it
// twice, read twice ...), is stored too, when it is first read, rather than
// computed again with every streamed step before it (PlannedStep::shared).
#include <string>
#include <vector>

#include "jobs/pipeline/pipeline.hpp"

namespace tw {

struct PlannedStep {
  const PipelineStep* step = nullptr;
  std::vector<int> reads;     // result slots it reads (0.. inputs-1: the pipeline's inputs; then one per step)
  PixelFormat out;            // its image's pixel type (meaningless when !image)
  bool image = true;          // reductions give numbers, not an image
  bool barrier = false;       // reads its whole input before giving a pixel
  bool stores_input = false;  // a computed input is stored first (the op reads it twice)
  bool shared = false;        // a streamed step read more than once: stored once (barrier is set too)
};

struct PipelinePlan {
  std::vector<std::string> input_names;  // "input", or the command's image names
  std::vector<PlannedStep> steps;        // step i writes slot inputs + i
  int output_slot = -1;                  // the last step's image
  int slot_of_step(int index) const { return static_cast<int>(input_names.size()) + index; }
  // "1-3 streamed, 4 fill-holes (barrier), 5 edt (barrier), 6 streamed into the writer"
  std::string describe() const;
};

struct PlanInput {
  std::string name;  // how steps refer to it
  ImageType type;    // its pixel type and a name for messages (the file)
};

// InputError or ParamError naming the step for: an empty pipeline, a
// reference to a result that does not exist or is made later (a cycle), a
// wrong number of images, a pixel type the op cannot take, a last step that
// makes no image (when `writes_image`).
PipelinePlan plan_pipeline(const Pipeline& p, const std::vector<PlanInput>& inputs, bool writes_image = true);

// The slot of a result by its name or step number, for --keep (InputError).
int find_result(const Pipeline& p, const PipelinePlan& plan, const std::string& name);

}  // namespace tw
