// Go's regexp (RE2), searched (MatchString) as Go validators do. Same protocol as engine.py; names
// are UTF-8, so they hold no lone surrogates.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

func decode(line string) string {
	var text strings.Builder
	for _, c := range strings.Fields(line) {
		n, _ := strconv.ParseInt(c, 16, 32)
		text.WriteRune(rune(n))
	}
	return text.String()
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	in.Scan()
	pattern, err := regexp.Compile(decode(in.Text()))
	if err != nil {
		fmt.Println("error", err)
		return
	}
	for in.Scan() {
		if pattern.MatchString(decode(in.Text())) {
			fmt.Println("1")
		} else {
			fmt.Println("0")
		}
	}
}
