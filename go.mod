module github.com/purgatory-go/purgatory

go 1.25.0

require (
	github.com/emirpasic/gods/v2 v2.0.0-alpha
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
