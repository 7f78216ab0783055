module github.com/davidgoliath/dgenv

go 1.26
