// Package costs prices the commands of a replay: the sched.CostModel the
// engine asks once per command. A Model is built from a JSON Config (the
// --costs file) and has three parts, each optional:
//
//   - fixed runtimes per message kind, overriding the reference's defaults
//     (sched.DefaultCosts);
//   - a runtime table for CallFunction keyed by the clean function name,
//     optionally refined by the shapes and dtype of its distinct tensor
//     inputs ("aten.mm:(4096x4096)x(4096x4096):bfloat16");
//   - a communication model for Reduce and remote SendTensor:
//     latency + moved bytes / bandwidth, with the ring algorithm's factors
//     and separate intra-host and inter-host links.
//
// The empty Config ({}) prices exactly as the reference does, so golden
// results do not change. A Model is immutable once built and safe for
// concurrent use by many engines.
//
// Units: times in nanoseconds (int64), bandwidths in GB/s where
// 1 GB/s = 1e9 bytes per second = 1 byte per nanosecond, sizes in bytes.
package costs
