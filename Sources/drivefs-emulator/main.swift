import DriveEmulator
print("drivefs-emulator: not yet")
