// Package hardware holds hardware specifications as data: per GPU its dense
// peak FLOP/s per dtype, HBM capacity and bandwidth, and efficiency curves
// that depend on an operation's size; per host the GPUs and their NVLink
// bandwidth; across hosts the NIC bandwidth per GPU and per-step latencies.
//
// A Spec is a JSON document. Built-in presets (presets/*.json, embedded)
// describe DGX/HGX-style 8-GPU systems; each cites its sources in its
// "sources" field, since JSON has no comments. Load takes a preset name or
// a file path. The package holds specifications only: pricing an operation
// with them is internal/costs' job.
//
// Units follow the field names: _tflops (1e12 FLOP/s), _tbps (1e12
// bytes/s), _gbps (1e9 bytes/s, one byte per nanosecond), _gb (1e9 bytes),
// _us and _ns.
package hardware
