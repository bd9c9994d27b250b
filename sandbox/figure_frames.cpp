#include "figure_frames.hpp"

#include <algorithm>
#include <cstring>

namespace sandgate::sandbox {

namespace {

std::uint32_t big_endian(const std::string& s, std::size_t at) {
  auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + i]));
  };
  return byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
}

std::string count_of(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what;
}

std::string bytes_text(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

std::optional<std::pair<std::uint32_t, std::uint32_t>> png_size(const std::string& png) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  // Signature (8), then the first chunk: length 13 (4), "IHDR" (4), width (4), height (4).
  if (png.size() < 33 || png.compare(0, 8, kSignature, 8) != 0) return std::nullopt;
  if (big_endian(png, 8) != 13 || png.compare(12, 4, "IHDR") != 0) return std::nullopt;
  std::uint32_t width = big_endian(png, 16), height = big_endian(png, 20);
  // The PNG specification's bound: 2^31 - 1.
  if (width == 0 || height == 0 || width > 0x7fffffffu || height > 0x7fffffffu) return std::nullopt;
  return std::make_pair(width, height);
}

void FigureCollector::add_unsent(std::uint32_t reason) {
  if (reason == static_cast<std::uint32_t>(figure_wire::Unsent::over_bytes))
    ++too_large_;
  else
    ++over_count_;
}

bool FigureCollector::admit(std::size_t length) {
  if (images_.size() >= limits_.max_count) {
    ++over_count_;
    return false;
  }
  if (length > limits_.max_bytes - kept_bytes_) {
    ++over_bytes_;
    return false;
  }
  return true;
}

void FigureCollector::add(std::string png) {
  if (png.empty() || images_.size() >= limits_.max_count) {
    ++over_count_;
    return;
  }
  auto size = png_size(png);
  if (!size) {
    ++not_png_;
  } else if (size->first > limits_.max_side || size->second > limits_.max_side) {
    ++over_side_;
  } else if (png.size() > limits_.max_bytes - kept_bytes_) {
    ++over_bytes_;
  } else {
    kept_bytes_ += png.size();
    images_.push_back({std::move(png), size->first, size->second});
  }
}

std::string FigureCollector::note() const {
  std::vector<std::string> parts;
  if (over_count_)
    parts.push_back(count_of(
        over_count_, "over the limit of " + std::to_string(limits_.max_count) + " per call"));
  if (over_side_)
    parts.push_back(count_of(over_side_, "larger than " + std::to_string(limits_.max_side) + "x" +
                                             std::to_string(limits_.max_side) + " pixels"));
  if (too_large_ || over_bytes_)
    parts.push_back(count_of(too_large_ + over_bytes_,
                             "over the " + bytes_text(limits_.max_bytes) + " of images per call"));
  if (not_png_) parts.push_back(count_of(not_png_, "not a PNG"));
  std::string text;
  if (!parts.empty()) {
    text = "Figures not returned: ";
    for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : "") + parts[i];
    text += ".";
  }
  if (malformed_)
    text += std::string(text.empty() ? "" : " ") +
            "The figure channel carried malformed data; what followed it was ignored.";
  return text;
}

std::size_t FrameReader::wanted() const {
  if (other_) return 0;
  if (in_payload_) return std::min<std::size_t>(payload_left_, 64 * 1024);
  return figure_wire::kHeaderSize - header_filled_;
}

void FrameReader::start_frame(std::uint32_t seq, FigureCollector* sink) {
  std::uint32_t magic, frame_seq, length;
  std::memcpy(&magic, header_.data(), 4);
  std::memcpy(&frame_seq, header_.data() + 4, 4);
  std::memcpy(&length, header_.data() + 8, 4);
  std::memcpy(&reason_, header_.data() + 12, 4);
  if (magic != figure_wire::kImageMagic || length > max_frame_bytes_) {
    other_ = true;  // header_ stays whole for take_other()
    return;
  }
  header_filled_ = 0;
  // What could not be kept is counted now and never held: a call's figures cost the gateway at
  // most the per-call bytes.
  keep_ = sink != nullptr && frame_seq == seq && (length == 0 || sink->admit(length));
  payload_.clear();
  if (keep_) payload_.reserve(length);
  payload_left_ = length;
  in_payload_ = true;
  if (length == 0) {
    in_payload_ = false;
    if (keep_) sink->add_unsent(reason_);
  }
}

std::size_t FrameReader::take(const char* data, std::size_t n, std::uint32_t seq,
                              FigureCollector* sink) {
  std::size_t used = 0;
  while (used < n && !other_) {
    if (!in_payload_) {
      std::size_t k = std::min(n - used, figure_wire::kHeaderSize - header_filled_);
      std::memcpy(header_.data() + header_filled_, data + used, k);
      header_filled_ += k;
      used += k;
      if (header_filled_ == figure_wire::kHeaderSize) start_frame(seq, sink);
      continue;
    }
    std::size_t k = std::min<std::size_t>(n - used, payload_left_);
    if (keep_) payload_.append(data + used, k);
    payload_left_ -= static_cast<std::uint32_t>(k);
    used += k;
    if (payload_left_ == 0) {
      in_payload_ = false;
      // The sink may have changed since the header (an interrupt reads without one).
      if (keep_ && sink != nullptr) sink->add(std::move(payload_));
      payload_ = {};
    }
  }
  return used;
}

std::optional<std::array<char, figure_wire::kHeaderSize>> FrameReader::take_other() {
  if (!other_) return std::nullopt;
  other_ = false;
  header_filled_ = 0;
  return header_;
}

}  // namespace sandgate::sandbox
