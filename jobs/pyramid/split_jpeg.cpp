#include <string>

#include "engine/error.hpp"
#include "engine/warnings.hpp"
#include "jobs/pyramid/level_producer.hpp"

namespace tw {

void enable_split_jpeg(JpegCoding& gpu, const JpegEncodeSpecs& encode, const std::optional<JpegCoefLayout>& coefs,
                       int slots, PixelFormat fmt, const std::vector<CascadeLevel>& levels, int64_t band_rows,
                       size_t& room, bool* split_encode, bool* split_decode) {
  const size_t enc_need = cuda_encode_bytes(encode, levels);
  if (enc_need > 0 && enc_need <= room) {
    try {
      gpu.enable_jpeg_encode(encode);
      room -= enc_need;
      if (split_encode) *split_encode = true;
    } catch (const CudaError& e) {
      warn(std::string("GPU JPEG transform unavailable (") + e.what() + "); encoding on the CPU");
    }
  }
  const size_t coef_need = coefs ? cuda_coef_bytes(fmt, levels[0], band_rows, *coefs, slots) : 0;
  if (coefs && coef_need <= room) {
    try {
      gpu.enable_coefs(*coefs, slots);
      room -= coef_need;
      if (split_decode) *split_decode = true;
    } catch (const CudaError& e) {
      warn(std::string("GPU IDCT unavailable (") + e.what() + "); decoding on the CPU");
    }
  }
}

}  // namespace tw
