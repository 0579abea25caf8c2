#Requires -RunAsAdministrator
<#
.SYNOPSIS
Installs rsndk's test-signed package on a Windows Server test machine.

.DESCRIPTION
Run from the package folder (rsndk-package), in an elevated PowerShell:

    .\install.ps1

Steps, each stopping the script with a message when it cannot proceed:
 1. Test signing: Secure Boot must be off (Windows ignores testsigning with
    it on); `bcdedit /set testsigning on` if it is not on yet, then a reboot
    and a second run.
 2. The catalog rsndk.cat must be in this folder, signed by the package's
    test certificate (made on Windows with inf2cat, then signed:
    docs/windows.md, section 3). Windows installs no driver package
    without one.
 3. The test CA goes to LocalMachine\Root and the signing certificate to
    LocalMachine\TrustedPublisher (so the install does not ask).
 4. `netcfg -v -l rsndkp.inf -c p -i RSNDK_MUXP` installs the protocol edge,
    its notify object and, through it, one rsndk virtual adapter over each
    Ethernet NIC the protocol binds to.
 5. What Windows now reports: the adapters, Get-NetAdapterRdma and
    Get-SmbClientNetworkInterface (RDMA Capable on the rsndk adapter is the
    first thing a Windows run must show).
#>
param()
$ErrorActionPreference = 'Stop'
$here = Split-Path -Parent $MyInvocation.MyCommand.Path

function Stop-Install([string]$message, [int]$code) {
    Write-Host "install.ps1: $message" -ForegroundColor Red
    exit $code
}

# 1. Test signing.
$secureBoot = $false
try { $secureBoot = Confirm-SecureBootUEFI } catch { $secureBoot = $false }
if ($secureBoot) {
    Stop-Install 'Secure Boot is on: Windows ignores test signing. Turn it off in the firmware (Hyper-V: Set-VMFirmware -EnableSecureBoot Off) and run again.' 2
}
$bcd = (& bcdedit.exe /enum '{current}') | Out-String
if ($bcd -notmatch '(?im)^\s*testsigning\s+Yes') {
    & bcdedit.exe /set testsigning on | Out-Null
    if ($LASTEXITCODE -ne 0) { Stop-Install "bcdedit /set testsigning on failed ($LASTEXITCODE)" 2 }
    Stop-Install 'test signing is now on: reboot (Restart-Computer), then run this script again.' 3
}

# 2. The catalog.
foreach ($file in 'rsndkp.inf', 'rsndk_mp.inf', 'rsndk.sys', 'rsndknotify.dll', 'rsndk-test-ca.cer', 'rsndk-test-signer.cer') {
    if (-not (Test-Path (Join-Path $here $file))) { Stop-Install "$file is missing from $here" 4 }
}
$catalog = Join-Path $here 'rsndk.cat'
if (-not (Test-Path $catalog)) {
    Stop-Install 'rsndk.cat is missing: make it with inf2cat and sign it (docs/windows.md, section 3).' 4
}

# 3. Certificates.
Import-Certificate -FilePath (Join-Path $here 'rsndk-test-ca.cer') -CertStoreLocation Cert:\LocalMachine\Root | Out-Null
Import-Certificate -FilePath (Join-Path $here 'rsndk-test-signer.cer') -CertStoreLocation Cert:\LocalMachine\TrustedPublisher | Out-Null
foreach ($file in 'rsndk.sys', 'rsndknotify.dll', 'rsndk.cat') {
    $signature = Get-AuthenticodeSignature (Join-Path $here $file)
    Write-Host ("{0,-16} {1} ({2})" -f $file, $signature.Status, $signature.SignerCertificate.Subject)
    if ($signature.Status -ne 'Valid') { Stop-Install "$file's signature is $($signature.Status)" 5 }
}

# 4. The protocol edge, its notify object, the virtual adapters.
& netcfg.exe -v -l (Join-Path $here 'rsndkp.inf') -c p -i RSNDK_MUXP
if ($LASTEXITCODE -ne 0) { Stop-Install "netcfg -l rsndkp.inf -c p -i RSNDK_MUXP failed ($LASTEXITCODE); see C:\Windows\INF\setupapi.dev.log and setupapi.app.log" 6 }

# 5. What Windows reports.
Get-NetAdapter | Format-Table -AutoSize Name, InterfaceDescription, Status, MacAddress, LinkSpeed
Get-NetAdapterBinding -ComponentID RSNDK_MUXP -ErrorAction SilentlyContinue | Format-Table -AutoSize Name, DisplayName, Enabled
Get-NetAdapterRdma | Format-Table -AutoSize Name, InterfaceDescription, Enabled, Operational
Get-SmbClientNetworkInterface | Format-Table -AutoSize
