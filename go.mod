module github.com/fastsim/fastsim

go 1.26.8

require (
	github.com/dave/jennifer v1.7.1
	github.com/klauspost/compress v1.20.4
)
