package dataset_test

import (
	"fmt"
	"strings"

	"colo/dataset"
)

// A CSV file with a header and class names in the last column.
func ExampleReadCSV() {
	in := "width,height,kind\n1.5,2,cat\n3,4,dog\n0.5,1,cat\n"
	d, err := dataset.ReadCSV(strings.NewReader(in), "pets.csv", dataset.CSVOptions{LabelCol: -1})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Len(), d.Dim, d.Classes, d.ClassNames)
	fmt.Println(d.Row(1), d.Labels)
	// Output:
	// 3 2 2 [cat dog]
	// [3 4] [0 1 0]
}

// Errors name the file, the line and the field.
func ExampleReadLibSVM() {
	_, err := dataset.ReadLibSVM(strings.NewReader("1 1:0.5 2:1\n-1 2:x\n"), "train.svm", dataset.DefaultLibSVMOptions())
	fmt.Println(err)
	// Output:
	// train.svm:2: field 2: "2:x": want idx:value with a finite number value
}
