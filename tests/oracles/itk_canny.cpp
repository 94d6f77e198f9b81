// ITK's Canny as the reference for `filter canny --variant itk`: runs
// itk::CannyEdgeDetectionImageFilter<float, float> (ITK 5) on an 8-bit gray
// .npy, with ITK's defaults for everything not given.
//
// usage:
//   itk_canny IN.npy VARIANCE UPPER LOWER EDGES.npy [SMOOTHED.npy [TAPS.txt]]
//
// EDGES.npy: uint8, 255 where ITK's output is 1. SMOOTHED.npy: float32, the
// image through DiscreteGaussianImageFilter<float, float> with the variance
// and maximum error Canny gives it (the filter Canny runs first). TAPS.txt:
// the GaussianOperator's coefficients DiscreteGaussianImageFilter builds
// (MaximumKernelWidth 32), one per line, %.17g.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "itkCannyEdgeDetectionImageFilter.h"
#include "itkDiscreteGaussianImageFilter.h"
#include "itkGaussianOperator.h"
#include "itkImage.h"

namespace {

using FloatImage = itk::Image<float, 2>;

struct Gray {
  int64_t w = 0, h = 0;
  std::vector<uint8_t> px;
};

// A C-order 2-D uint8 .npy (what tests/oracles/filter_oracle.py and the
// tests' save_npy write).
Gray load_gray_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error("not an npy file: " + path);
  uint32_t len = 0;
  if (magic[6] == 1) {
    uint16_t l16 = 0;
    f.read(reinterpret_cast<char*>(&l16), 2);
    len = l16;
  } else {
    f.read(reinterpret_cast<char*>(&len), 4);
  }
  std::string header(len, ' ');
  f.read(header.data(), len);
  if (header.find("u1'") == std::string::npos) throw std::runtime_error(path + ": not uint8: " + header);
  if (header.find("'fortran_order': True") != std::string::npos) throw std::runtime_error(path + ": fortran order");
  const auto p0 = header.find('(', header.find("shape")), p1 = header.find(')', p0);
  std::vector<int64_t> shape;
  std::stringstream ss(header.substr(p0 + 1, p1 - p0 - 1));
  std::string tok;
  while (std::getline(ss, tok, ','))
    if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(tok));
  if (shape.size() != 2) throw std::runtime_error(path + ": not a 2-D (gray) image");
  Gray g;
  g.h = shape[0], g.w = shape[1];
  g.px.resize(static_cast<size_t>(g.w * g.h));
  f.read(reinterpret_cast<char*>(g.px.data()), static_cast<std::streamsize>(g.px.size()));
  if (!f) throw std::runtime_error("short npy file " + path);
  return g;
}

void save_npy(const std::string& path, const char* descr, int64_t w, int64_t h, const void* data, size_t bytes) {
  std::ostringstream hs;
  hs << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (" << h << ", " << w << "), }";
  std::string header = hs.str();
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!f) throw std::runtime_error("cannot write " + path);
}

FloatImage::Pointer to_itk(const Gray& g) {
  auto img = FloatImage::New();
  FloatImage::RegionType region;
  region.SetSize({{static_cast<itk::SizeValueType>(g.w), static_cast<itk::SizeValueType>(g.h)}});
  img->SetRegions(region);
  img->Allocate();
  float* p = img->GetBufferPointer();  // x fastest, as in the .npy
  for (size_t i = 0; i < g.px.size(); ++i) p[i] = static_cast<float>(g.px[i]);
  return img;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6 || argc > 8) {
    std::cerr << "usage: itk_canny IN.npy VARIANCE UPPER LOWER EDGES.npy [SMOOTHED.npy [TAPS.txt]]\n";
    return 2;
  }
  try {
    const Gray g = load_gray_npy(argv[1]);
    const double variance = std::stod(argv[2]);
    const float upper = std::stof(argv[3]), lower = std::stof(argv[4]);
    const FloatImage::Pointer in = to_itk(g);
    const size_t n = g.px.size();

    using Canny = itk::CannyEdgeDetectionImageFilter<FloatImage, FloatImage>;
    auto canny = Canny::New();
    canny->SetInput(in);
    canny->SetVariance(variance);
    canny->SetUpperThreshold(upper);
    canny->SetLowerThreshold(lower);
    canny->Update();
    const float* e = canny->GetOutput()->GetBufferPointer();
    std::vector<uint8_t> edges(n);
    for (size_t i = 0; i < n; ++i) edges[i] = e[i] != 0.f ? 255 : 0;
    save_npy(argv[5], "|u1", g.w, g.h, edges.data(), n);

    if (argc >= 7) {
      using Gaussian = itk::DiscreteGaussianImageFilter<FloatImage, FloatImage>;
      auto gauss = Gaussian::New();
      gauss->SetInput(in);
      gauss->SetVariance(variance);
      gauss->SetMaximumError(canny->GetMaximumError());
      gauss->Update();
      save_npy(argv[6], "<f4", g.w, g.h, gauss->GetOutput()->GetBufferPointer(), n * sizeof(float));
    }
    if (argc >= 8) {
      itk::GaussianOperator<double, 2> op;  // as DiscreteGaussianImageFilter::GenerateData builds it
      op.SetDirection(0);
      op.SetVariance(variance);
      op.SetMaximumKernelWidth(32);
      op.SetMaximumError(canny->GetMaximumError()[0]);
      op.CreateDirectional();
      FILE* f = std::fopen(argv[7], "w");
      if (!f) throw std::runtime_error(std::string("cannot write ") + argv[7]);
      for (size_t i = 0; i < op.Size(); ++i) std::fprintf(f, "%.17g\n", op[i]);
      std::fclose(f);
    }
  } catch (const std::exception& ex) {
    std::cerr << "itk_canny: " << ex.what() << "\n";
    return 1;
  }
  return 0;
}
