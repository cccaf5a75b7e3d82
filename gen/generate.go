// Package gen holds the code generated from tools/gen-messages/messages.spec:
// the message kinds (MsgKind), one struct per simulated message, the tagged
// union Msg and its zero-allocation decoder DecodeMsg, the Handler interface
// with its Dispatch switch, and the engine's struct-of-arrays tables
// (TaskTable).
//
// Every other file in this package is generated: edit the spec or the
// generator, then run go generate.
package gen

//go:generate go run ../tools/gen-messages -spec ../tools/gen-messages/messages.spec -out .
