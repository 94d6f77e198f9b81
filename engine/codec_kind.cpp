#include "engine/codec_kind.hpp"

#include "engine/error.hpp"

namespace tw {

Codec parse_codec(const std::string& s) {
  if (s == "none" || s == "raw") return Codec::kNone;
  if (s == "jpeg" || s == "jpg") return Codec::kJpeg;
  if (s == "deflate" || s == "zip") return Codec::kDeflate;
  if (s == "zstd") return Codec::kZstd;
  if (s == "lzw") return Codec::kLzw;
  if (s == "png") return Codec::kPng;
  throw InputError("unknown compression '" + s + "' (expected jpeg, deflate, zstd, lzw, none, or png for Deep Zoom)");
}

const char* codec_name(Codec c) {
  switch (c) {
    case Codec::kNone:
      return "none";
    case Codec::kJpeg:
      return "jpeg";
    case Codec::kDeflate:
      return "deflate";
    case Codec::kZstd:
      return "zstd";
    case Codec::kLzw:
      return "lzw";
    case Codec::kOther:
      return "other";
    case Codec::kPng:
      return "png";
  }
  return "?";
}

ChromaSubsampling parse_subsampling(const std::string& s) {
  if (s == "420" || s == "4:2:0") return ChromaSubsampling::k420;
  if (s == "444" || s == "4:4:4") return ChromaSubsampling::k444;
  throw InputError("unknown chroma subsampling '" + s + "' (expected 420 or 444)");
}

}  // namespace tw
