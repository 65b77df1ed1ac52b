module sleuth.local/testimages

go 1.24
