from tui.launch import console

if __name__ == "__main__":
    console()
