module github.com/fastsim/fastsim

go 1.26.8

require (
	github.com/RoaringBitmap/roaring/v2 v2.30.0
	github.com/dave/jennifer v1.7.1
	github.com/klauspost/compress v1.20.4
	golang.org/x/sync v0.25.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
