module github.com/stride-lm/stride

go 1.26

require (
	github.com/x448/float16 v0.8.4 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
