// The replay of what the sampler and the phase markers recorded: devices, view samples, names,
// phases and notes.
#include "analyzer/replay.h"

namespace gmt::analyzer {

void Replay::on(const format::DeviceRecord&) {}
void Replay::on(const format::SampleRecord&) {}
void Replay::on(const format::NameRecord&) {}
void Replay::on(const format::PhaseRecord&) {}
void Replay::on(const format::NoteRecord&) {}

}  // namespace gmt::analyzer
